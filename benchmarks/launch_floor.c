/* The floor of host launch cost: a C loop of cuLaunchKernel on a cubin, and CUDA-graph replay.
 *
 *   launch_floor CUBIN ENTRY BLOCK_X SHARED PARAMS [BURST ROUNDS GRAPH_N GRAPH_ROUNDS]
 *
 * PARAMS lists the kernel's parameters in order, comma-separated: "p" a device buffer (4 KiB,
 * zeroed), "0" a NULL pointer (Triton's hidden global_scratch), "i:V" a 32-bit int V; "-" when
 * there are none. Grid is one block.
 *
 * Launch: BURST launches on the legacy default stream, then cuCtxSynchronize; ROUNDS bursts, each
 * giving one sample of host microseconds per launch. Graph: GRAPH_N launches captured on a stream
 * into one graph; each of GRAPH_ROUNDS replays timed with events gives one sample of GPU
 * microseconds per kernel (replay time / GRAPH_N). One JSON object on stdout with every sample
 * (the suite takes medians and spreads).
 *
 * libcuda is opened with dlopen ($TMLR_LIBCUDA, else libcuda.so.1), so a C compiler is all it takes:
 *   nvcc -O2 -o launch_floor benchmarks/launch_floor.c -ldl      (or: cc -O2 ... -ldl)
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *Handle;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(Handle *, int);
static CUresult (*cuCtxSetCurrent)(Handle);
static CUresult (*cuCtxSynchronize)(void);
static CUresult (*cuModuleLoad)(Handle *, const char *);
static CUresult (*cuModuleGetFunction)(Handle *, Handle, const char *);
static CUresult (*cuFuncSetAttribute)(Handle, int, int);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
static CUresult (*cuLaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  Handle, void **, void **);
static CUresult (*cuStreamCreate)(Handle *, unsigned);
static CUresult (*cuStreamBeginCapture)(Handle, int);
static CUresult (*cuStreamEndCapture)(Handle, Handle *);
static CUresult (*cuGraphInstantiateWithFlags)(Handle *, Handle, unsigned long long);
static CUresult (*cuGraphLaunch)(Handle, Handle);
static CUresult (*cuStreamSynchronize)(Handle);
static CUresult (*cuEventCreate)(Handle *, unsigned);
static CUresult (*cuEventRecord)(Handle, Handle);
static CUresult (*cuEventSynchronize)(Handle);
static CUresult (*cuEventElapsedTime)(float *, Handle, Handle);
static CUresult (*cuGetErrorName)(CUresult, const char **);

static void fail(const char *what, const char *detail) {
    printf("{\"error\": \"%s: %s\"}\n", what, detail);
    exit(1);
}

static void check(CUresult r, const char *what) {
    if (r != 0) {
        const char *name = "unknown";
        if (cuGetErrorName) cuGetErrorName(r, &name);
        fail(what, name);
    }
}

static void *sym(void *lib, const char *a, const char *b) {
    void *p = dlsym(lib, a);
    if (!p && b) p = dlsym(lib, b);
    if (!p) fail("missing driver symbol", a);
    return p;
}

static void load_driver(void) {
    const char *path = getenv("TMLR_LIBCUDA");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!lib) fail("dlopen libcuda", dlerror());
    *(void **)&cuGetErrorName = dlsym(lib, "cuGetErrorName");
    *(void **)&cuInit = sym(lib, "cuInit", NULL);
    *(void **)&cuDeviceGet = sym(lib, "cuDeviceGet", NULL);
    *(void **)&cuDevicePrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain", NULL);
    *(void **)&cuCtxSetCurrent = sym(lib, "cuCtxSetCurrent", NULL);
    *(void **)&cuCtxSynchronize = sym(lib, "cuCtxSynchronize", NULL);
    *(void **)&cuModuleLoad = sym(lib, "cuModuleLoad", NULL);
    *(void **)&cuModuleGetFunction = sym(lib, "cuModuleGetFunction", NULL);
    *(void **)&cuFuncSetAttribute = sym(lib, "cuFuncSetAttribute", NULL);
    *(void **)&cuMemAlloc = sym(lib, "cuMemAlloc_v2", NULL);
    *(void **)&cuMemsetD8 = sym(lib, "cuMemsetD8_v2", NULL);
    *(void **)&cuLaunchKernel = sym(lib, "cuLaunchKernel", NULL);
    *(void **)&cuStreamCreate = sym(lib, "cuStreamCreate", NULL);
    *(void **)&cuStreamBeginCapture = sym(lib, "cuStreamBeginCapture_v2", NULL);
    *(void **)&cuStreamEndCapture = sym(lib, "cuStreamEndCapture", NULL);
    *(void **)&cuGraphInstantiateWithFlags = sym(lib, "cuGraphInstantiateWithFlags", NULL);
    *(void **)&cuGraphLaunch = sym(lib, "cuGraphLaunch", NULL);
    *(void **)&cuStreamSynchronize = sym(lib, "cuStreamSynchronize", NULL);
    *(void **)&cuEventCreate = sym(lib, "cuEventCreate", NULL);
    *(void **)&cuEventRecord = sym(lib, "cuEventRecord", NULL);
    *(void **)&cuEventSynchronize = sym(lib, "cuEventSynchronize", NULL);
    *(void **)&cuEventElapsedTime = sym(lib, "cuEventElapsedTime", "cuEventElapsedTime_v2");
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

static void print_samples(const char *key, const double *v, int n) {
    printf("\"%s\": [", key);
    for (int i = 0; i < n; i++) printf(i ? ", %.4f" : "%.4f", v[i]);
    printf("]");
}

#define MAX_PARAMS 64

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s CUBIN ENTRY BLOCK_X SHARED PARAMS [BURST ROUNDS GRAPH_N GRAPH_ROUNDS]\n", argv[0]);
        return 2;
    }
    const char *cubin = argv[1], *entry = argv[2], *spec = argv[5];
    unsigned block = (unsigned)atoi(argv[3]), shared = (unsigned)atoi(argv[4]);
    int burst = argc > 6 ? atoi(argv[6]) : 200, rounds = argc > 7 ? atoi(argv[7]) : 30;
    int graph_n = argc > 8 ? atoi(argv[8]) : 200, graph_rounds = argc > 9 ? atoi(argv[9]) : 20;
    if (burst < 1 || rounds < 1 || graph_rounds < 1 || graph_n < 0) fail("bad arguments", "counts must be positive");

    /* parse the parameter list before touching the driver */
    char kinds[MAX_PARAMS];
    int ints[MAX_PARAMS];
    int n = 0;
    if (strcmp(spec, "-") != 0) {
        char *copy = strdup(spec), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (n == MAX_PARAMS) fail("bad PARAMS", "too many parameters");
            if (strcmp(tok, "p") == 0 || strcmp(tok, "0") == 0) {
                kinds[n] = tok[0];
            } else if (strncmp(tok, "i:", 2) == 0) {
                kinds[n] = 'i';
                ints[n] = atoi(tok + 2);
            } else {
                fail("bad PARAMS token", tok);
            }
            n++;
        }
        free(copy);
    }

    load_driver();
    check(cuInit(0), "cuInit");
    int dev;
    Handle ctx, mod, fn, stream, graph, exec, e0, e1;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(cuModuleLoad(&mod, cubin), "cuModuleLoad");
    check(cuModuleGetFunction(&fn, mod, entry), "cuModuleGetFunction");
    if (shared > 48 * 1024) check(cuFuncSetAttribute(fn, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, (int)shared), "cuFuncSetAttribute");

    CUdeviceptr ptrs[MAX_PARAMS];
    void *params[MAX_PARAMS + 1];
    for (int i = 0; i < n; i++) {
        if (kinds[i] == 'p') {
            check(cuMemAlloc(&ptrs[i], 4096), "cuMemAlloc");
            check(cuMemsetD8(ptrs[i], 0, 4096), "cuMemsetD8");
            params[i] = &ptrs[i];
        } else if (kinds[i] == '0') {
            ptrs[i] = 0;
            params[i] = &ptrs[i];
        } else {
            params[i] = &ints[i];
        }
    }
    void **kparams = n ? params : NULL;

    /* launch loop */
    for (int i = 0; i < 50; i++) check(cuLaunchKernel(fn, 1, 1, 1, block, 1, 1, shared, NULL, kparams, NULL), "cuLaunchKernel");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    double *launch_us = malloc(sizeof(double) * rounds), *graph_us = malloc(sizeof(double) * graph_rounds);
    for (int r = 0; r < rounds; r++) {
        check(cuCtxSynchronize(), "cuCtxSynchronize");
        double t0 = now_us();
        CUresult err = 0;
        for (int i = 0; i < burst; i++) err |= cuLaunchKernel(fn, 1, 1, 1, block, 1, 1, shared, NULL, kparams, NULL);
        launch_us[r] = (now_us() - t0) / burst;
        check(err, "cuLaunchKernel (burst)");
    }
    check(cuCtxSynchronize(), "cuCtxSynchronize after the launch loop");

    /* graph of graph_n launches, replayed */
    if (graph_n > 0) {
        check(cuStreamCreate(&stream, 1 /* NON_BLOCKING */), "cuStreamCreate");
        check(cuStreamBeginCapture(stream, 0 /* GLOBAL */), "cuStreamBeginCapture");
        for (int i = 0; i < graph_n; i++)
            check(cuLaunchKernel(fn, 1, 1, 1, block, 1, 1, shared, stream, kparams, NULL), "cuLaunchKernel (capture)");
        check(cuStreamEndCapture(stream, &graph), "cuStreamEndCapture");
        check(cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
        check(cuEventCreate(&e0, 0), "cuEventCreate");
        check(cuEventCreate(&e1, 0), "cuEventCreate");
        check(cuGraphLaunch(exec, stream), "cuGraphLaunch");
        check(cuStreamSynchronize(stream), "cuStreamSynchronize");
        for (int r = 0; r < graph_rounds; r++) {
            float ms = 0;
            check(cuEventRecord(e0, stream), "cuEventRecord");
            check(cuGraphLaunch(exec, stream), "cuGraphLaunch");
            check(cuEventRecord(e1, stream), "cuEventRecord");
            check(cuEventSynchronize(e1), "cuEventSynchronize");
            check(cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime");
            graph_us[r] = ms * 1000.0 / graph_n;
        }
    }
    printf("{\"entry\": \"%s\", \"params\": %d, \"burst\": %d, \"rounds\": %d, \"graph_n\": %d, \"graph_rounds\": %d, ",
           entry, n, burst, rounds, graph_n, graph_n > 0 ? graph_rounds : 0);
    print_samples("launch_us", launch_us, rounds);
    printf(", ");
    print_samples("graph_us_per_kernel", graph_us, graph_n > 0 ? graph_rounds : 0);
    printf("}\n");
    free(launch_us);
    free(graph_us);
    return 0;
}
