/* The floor of host launch cost: cuLaunchKernel called from C, as a shared library that
 * benchmarks/launch.py loads with ctypes, so the C floor is measured in the same process and the
 * same interleaved rounds as the Python launchers (one ctypes call runs a whole burst).
 *
 *   int floor_open(const char *cubin, const char *entry, unsigned block, unsigned shared,
 *                  int device, int nparams, const unsigned long long *values)
 *       loads CUBIN into DEVICE's primary context (the one torch and tmlr use) and keeps ENTRY
 *       with its parameters: each value sits in an 8-byte slot (a device pointer, or a 32-bit int
 *       in the slot's low bytes); returns a handle >= 0, or -1 with floor_error() set.
 *   int floor_burst(int handle, unsigned grid, unsigned long long stream, int count)
 *       COUNT launches of grid (GRID,1,1) on STREAM; returns the first error's CUresult, or 0.
 *   const char *floor_error(void)
 *
 * libcuda is opened with dlopen ($TMLR_LIBCUDA, else libcuda.so.1), so a C compiler is all it takes:
 *   cc -O2 -shared -fPIC -o launch_floor.so benchmarks/launch_floor.c -ldl   (or nvcc -shared -Xcompiler -fPIC)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef void *Handle;

#define MAX_KERNELS 16
#define MAX_PARAMS 64

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(Handle *, int);
static CUresult (*cuCtxSetCurrent)(Handle);
static CUresult (*cuModuleLoad)(Handle *, const char *);
static CUresult (*cuModuleGetFunction)(Handle *, Handle, const char *);
static CUresult (*cuFuncSetAttribute)(Handle, int, int);
static CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  Handle, void **, void **);

struct kernel {
    Handle fn;
    unsigned block, shared;
    unsigned long long slots[MAX_PARAMS];
    void *params[MAX_PARAMS];
    void **kparams;
};

static struct kernel kernels[MAX_KERNELS];
static int n_kernels;
static char error_text[256];

const char *floor_error(void) { return error_text; }

static int fail(const char *what, int code) {
    snprintf(error_text, sizeof error_text, "%s (CUresult %d)", what, code);
    return -1;
}

static int load_driver(void) {
    if (cuLaunchKernel) return 0;
    const char *path = getenv("TMLR_LIBCUDA");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!lib) {
        snprintf(error_text, sizeof error_text, "dlopen libcuda: %s", dlerror());
        return -1;
    }
    *(void **)&cuInit = dlsym(lib, "cuInit");
    *(void **)&cuDeviceGet = dlsym(lib, "cuDeviceGet");
    *(void **)&cuDevicePrimaryCtxRetain = dlsym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&cuCtxSetCurrent = dlsym(lib, "cuCtxSetCurrent");
    *(void **)&cuModuleLoad = dlsym(lib, "cuModuleLoad");
    *(void **)&cuModuleGetFunction = dlsym(lib, "cuModuleGetFunction");
    *(void **)&cuFuncSetAttribute = dlsym(lib, "cuFuncSetAttribute");
    *(void **)&cuLaunchKernel = dlsym(lib, "cuLaunchKernel");
    if (!cuInit || !cuDeviceGet || !cuDevicePrimaryCtxRetain || !cuCtxSetCurrent || !cuModuleLoad ||
        !cuModuleGetFunction || !cuFuncSetAttribute || !cuLaunchKernel) {
        cuLaunchKernel = NULL;
        return fail("a driver symbol is missing", 0);
    }
    return 0;
}

int floor_open(const char *cubin, const char *entry, unsigned block, unsigned shared, int device, int nparams,
               const unsigned long long *values) {
    if (n_kernels == MAX_KERNELS || nparams < 0 || nparams > MAX_PARAMS) return fail("too many kernels or parameters", 0);
    if (load_driver() != 0) return -1;
    int dev, r;
    Handle ctx, mod;
    struct kernel *k = &kernels[n_kernels];
    if ((r = cuInit(0)) != 0) return fail("cuInit", r);
    if ((r = cuDeviceGet(&dev, device)) != 0) return fail("cuDeviceGet", r);
    if ((r = cuDevicePrimaryCtxRetain(&ctx, dev)) != 0) return fail("cuDevicePrimaryCtxRetain", r);
    if ((r = cuCtxSetCurrent(ctx)) != 0) return fail("cuCtxSetCurrent", r);
    if ((r = cuModuleLoad(&mod, cubin)) != 0) return fail("cuModuleLoad", r);
    if ((r = cuModuleGetFunction(&k->fn, mod, entry)) != 0) return fail("cuModuleGetFunction", r);
    if (shared > 48 * 1024 && (r = cuFuncSetAttribute(k->fn, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, (int)shared)) != 0)
        return fail("cuFuncSetAttribute", r);
    for (int i = 0; i < nparams; i++) {
        k->slots[i] = values[i];
        k->params[i] = &k->slots[i];
    }
    k->kparams = nparams ? k->params : NULL;
    k->block = block;
    k->shared = shared;
    return n_kernels++;
}

int floor_burst(int handle, unsigned grid, unsigned long long stream, int count) {
    if (handle < 0 || handle >= n_kernels) return -1;
    struct kernel *k = &kernels[handle];
    CUresult err = 0;
    for (int i = 0; i < count; i++) {
        CUresult r = cuLaunchKernel(k->fn, grid, 1, 1, k->block, 1, 1, k->shared, (Handle)stream, k->kparams, NULL);
        if (r != 0 && err == 0) err = r;
    }
    return err;
}
