"""A kernel library that, like fla and gemlite, asks torch and Triton's driver about the GPU when imported and
picks its autotune configs from the answers (tests/build/test_build_device.py)."""
