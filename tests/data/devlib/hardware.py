import torch
import triton

NAME = torch.cuda.get_device_name()
CAPABILITY = torch.cuda.get_device_capability()
SMEM_OPTIN = torch.cuda.get_device_properties(0).shared_memory_per_block_optin
MAX_SHARED = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())["max_shared_mem"]

# as fla's check_shared_mem: the big-block configs only where a block may take Hopper's shared memory
if MAX_SHARED >= 232448 and SMEM_OPTIN == MAX_SHARED and CAPABILITY[0] >= 9:
    CONFIGS = [triton.Config({"BLOCK": 256}, num_warps=8)]
else:
    CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=2)]
