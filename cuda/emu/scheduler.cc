/* scheduler.cc - runs a kernel's grid on the host: blocks in turn, the threads of a
 * block as fibers switched at barriers. See device.h for the model.
 *
 * Each round runs every runnable thread, in a seeded shuffled order, until it exits or
 * waits at a barrier; then the barriers that every participant has reached complete
 * (warp operations first, then __syncthreads), and the next round starts. A round in
 * which no barrier can complete is a deadlock: reported with the waiting sites.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "cuda/emu/emu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

/* The fiber switch. On x86-64 a few instructions (the System V callee-saved registers
 * and the stack pointer: what a function call may not change); ucontext elsewhere,
 * whose swapcontext costs two system calls (signal masks) per switch. */
#if defined(__x86_64__)
extern "C" void remat_emu_switch(void **save_sp, void *load_sp);
asm(R"(
    .text
    .globl remat_emu_switch
    .type remat_emu_switch, @function
remat_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size remat_emu_switch, .-remat_emu_switch
    .section .note.GNU-stack,"",@progbits
    .text
)");
struct context {
    void *sp;
};
/* A fresh stack whose first switch "returns" into entry, entered as if called (the
 * stack pointer is 8 mod 16 there) with a null return address above it. */
static void context_make(context *c, char *stack, size_t bytes, void (*entry)()) {
    uintptr_t top = ((uintptr_t)(stack + bytes)) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr;          /* entry's return address: it never returns */
    *--sp = (void *)entry;    /* popped by the switch's ret */
    for (int i = 0; i < 6; i++) *--sp = nullptr; /* rbp rbx r12 r13 r14 r15 */
    c->sp = sp;
}
static int context_switch(context *from, context *to) {
    remat_emu_switch(&from->sp, to->sp);
    return 0;
}
#else
struct context {
    ucontext_t uc;
};
__attribute__((noinline)) static void context_make(context *c, char *stack, size_t bytes, void (*entry)()) {
    if (getcontext(&c->uc) != 0) abort();
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = bytes;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, entry, 0);
}
static int context_switch(context *from, context *to) { return swapcontext(&from->uc, &to->uc); }
#endif

namespace remat_emu {
namespace {

enum state { RUNNABLE, AT_SYNC, AT_BALLOT, AT_SHFL, DONE };

struct fiber {
    context ctx;
    char *stack = nullptr;
    uint3 tid;
    int linear = 0;
    state st = DONE;
    const char *file = nullptr; /* barrier site */
    int line = 0;
    int pred = 0;
    unsigned mask = 0, delta = 0;
    uint64_t bits = 0; /* shfl operand, then result */
    int result = 0;
};

const size_t kStack = 256 * 1024;
const int kMaxThreads = 1024;

struct grid_state {
    std::vector<fiber> fibers;
    context sched;
    fiber *cur = nullptr;
    uint3 block;
    dim3 grid_dim, block_dim;
    void (*run)(void *) = nullptr;
    void *closure = nullptr;
    const char *kernel = "";
    uint64_t rng = 0;
    int order = -1; /* 0 forward, 1 reverse, 2 shuffle */
#if EMU_ASAN
    const void *sched_bottom = nullptr;
    size_t sched_size = 0;
#endif
};

grid_state G;

uint64_t next_rand() {
    G.rng += 0x9e3779b97f4a7c15ull;
    uint64_t z = G.rng;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int order_mode() {
    if (G.order < 0) {
        const char *e = getenv("REMAT_CUDA_EMU_ORDER");
        G.order = 2;
        if (e && strcmp(e, "forward") == 0) G.order = 0;
        else if (e && strcmp(e, "reverse") == 0) G.order = 1;
        else if (e && *e && strcmp(e, "shuffle") != 0)
            fatal("REMAT_CUDA_EMU_ORDER is \"%s\", expected forward, reverse or shuffle", e);
    }
    return G.order;
}

void permute(std::vector<int> &v) {
    const int mode = order_mode();
    for (size_t i = 0; i < v.size(); i++) v[i] = (int)i;
    if (mode == 1) std::reverse(v.begin(), v.end());
    if (mode == 2)
        for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[next_rand() % i]);
}

char *new_stack() {
    void *p = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) fatal("cannot map a %zu-byte fiber stack", kStack);
    if (mprotect(p, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE) != 0) fatal("cannot protect a fiber stack's guard page");
    return (char *)p;
}

/* Switch from the scheduler to fiber f, and back when it yields or exits. */
void resume(fiber *f) {
    G.cur = f;
#if EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f->stack, kStack);
#endif
    if (context_switch(&G.sched, &f->ctx) != 0) fatal("swapcontext failed");
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    G.cur = nullptr;
}

/* From the running fiber back to the scheduler. */
void yield_to_scheduler(bool exiting) {
    fiber *f = G.cur;
#if EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(exiting ? nullptr : &fake, G.sched_bottom, G.sched_size);
#endif
    if (context_switch(&f->ctx, &G.sched) != 0) fatal("swapcontext failed");
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, &G.sched_bottom, &G.sched_size);
#endif
    (void)exiting;
}

void fiber_main() {
#if EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &G.sched_bottom, &G.sched_size);
#endif
    G.run(G.closure);
    G.cur->st = DONE;
    yield_to_scheduler(true);
    fatal("a finished thread was resumed");
}

fiber *self(const char *what) {
    if (!G.cur) fatal("%s called outside a kernel", what);
    return G.cur;
}

void wait_at(state s, const char *file, int line) {
    fiber *f = G.cur;
    f->st = s;
    f->file = file;
    f->line = line;
    yield_to_scheduler(false);
}

const char *state_name(state s) {
    switch (s) {
    case AT_SYNC: return "__syncthreads";
    case AT_BALLOT: return "__ballot_sync";
    case AT_SHFL: return "__shfl_down_sync";
    default: return "running";
    }
}

[[noreturn]] void report_stuck(const char *why, const fiber *a, const fiber *b) {
    char other[512];
    if (b->st == DONE) snprintf(other, sizeof other, "has exited");
    else snprintf(other, sizeof other, "waits at %s (%s:%d)", state_name(b->st), b->file, b->line);
    fatal("%s: kernel %s, block (%u,%u,%u): thread %d waits at %s (%s:%d) while thread %d %s", why, G.kernel,
          G.block.x, G.block.y, G.block.z, a->linear, state_name(a->st), a->file, a->line, b->linear, other);
}

/* Completes the warp operations every lane of the mask has reached. */
bool complete_warps(int n) {
    bool any = false;
    for (int w0 = 0; w0 < n; w0 += 32) {
        const int w1 = std::min(n, w0 + 32);
        fiber *first = nullptr;
        bool ready = true;
        for (int i = w0; i < w1 && ready; i++) {
            fiber *f = &G.fibers[(size_t)i];
            if (f->st != AT_BALLOT && f->st != AT_SHFL) continue;
            if (!first) first = f;
            else if (f->st != first->st || f->line != first->line || f->file != first->file)
                report_stuck("divergent warp operation", first, f);
        }
        if (!first) continue;
        for (int lane = 0; lane < w1 - w0; lane++) {
            if (!(first->mask >> lane & 1u)) continue;
            fiber *f = &G.fibers[(size_t)(w0 + lane)];
            if (f->st == DONE) report_stuck("a lane named in the mask has exited", first, f);
            if (f->st != first->st) ready = false;
            else if (f->mask != first->mask)
                fatal("kernel %s: lanes of warp %d disagree on the mask (0x%x, 0x%x)", G.kernel, w0 / 32, first->mask,
                      f->mask);
        }
        if (w1 - w0 < 32 && (first->mask >> (w1 - w0)) != 0)
            fatal("kernel %s: mask 0x%x names lanes beyond the block (%d threads)", G.kernel, first->mask, n);
        if (!ready) continue;
        if (first->st == AT_BALLOT) {
            unsigned ballot = 0;
            for (int lane = 0; lane < w1 - w0; lane++)
                if ((first->mask >> lane & 1u) && G.fibers[(size_t)(w0 + lane)].pred) ballot |= 1u << lane;
            for (int lane = 0; lane < w1 - w0; lane++) {
                fiber *f = &G.fibers[(size_t)(w0 + lane)];
                if (f->st == AT_BALLOT) f->result = (int)ballot, f->st = RUNNABLE;
            }
        } else {
            uint64_t in[32];
            for (int lane = 0; lane < w1 - w0; lane++) in[lane] = G.fibers[(size_t)(w0 + lane)].bits;
            for (int lane = 0; lane < w1 - w0; lane++) {
                fiber *f = &G.fibers[(size_t)(w0 + lane)];
                if (f->st != AT_SHFL) continue;
                const unsigned src = (unsigned)lane + f->delta;
                f->bits = src < (unsigned)(w1 - w0) && (first->mask >> src & 1u) ? in[src] : in[lane];
                f->st = RUNNABLE;
            }
        }
        any = true;
    }
    return any;
}

/* Completes a __syncthreads every live thread has reached. */
bool complete_block(int n) {
    fiber *first = nullptr;
    for (int i = 0; i < n; i++) {
        fiber *f = &G.fibers[(size_t)i];
        if (f->st == DONE) continue;
        if (f->st != AT_SYNC) return false;
        if (!first) first = f;
        else if (f->line != first->line || f->file != first->file)
            report_stuck("divergent __syncthreads", first, f);
    }
    if (!first) return false;
    int count = 0;
    for (int i = 0; i < n; i++) count += G.fibers[(size_t)i].st == AT_SYNC && G.fibers[(size_t)i].pred != 0;
    for (int i = 0; i < n; i++) {
        fiber *f = &G.fibers[(size_t)i];
        if (f->st == AT_SYNC) f->result = count, f->st = RUNNABLE;
    }
    return true;
}

void run_block(int n) {
    std::vector<int> order((size_t)n);
    for (int i = 0; i < n; i++) {
        fiber *f = &G.fibers[(size_t)i];
        f->linear = i;
        f->tid.x = (unsigned)i % G.block_dim.x;
        f->tid.y = (unsigned)i / G.block_dim.x % G.block_dim.y;
        f->tid.z = (unsigned)i / (G.block_dim.x * G.block_dim.y);
        f->st = RUNNABLE;
        context_make(&f->ctx, f->stack, kStack, fiber_main);
    }
    for (;;) {
        permute(order);
        for (int i : order)
            if (G.fibers[(size_t)i].st == RUNNABLE) resume(&G.fibers[(size_t)i]);
        bool live = false;
        for (int i = 0; i < n; i++) live |= G.fibers[(size_t)i].st != DONE;
        if (!live) return;
        if (complete_warps(n)) continue;
        if (complete_block(n)) continue;
        const fiber *a = nullptr, *b = nullptr;
        for (int i = 0; i < n; i++) {
            const fiber *f = &G.fibers[(size_t)i];
            if (!a && f->st != DONE) a = f;
            else if (a && (f->st != a->st || f->line != a->line || f->file != a->file)) {
                b = f;
                break;
            }
        }
        if (!b) b = a;
        report_stuck("deadlock", a, b);
    }
}

}  // namespace

void run_grid(const char *kernel, dim3 grid, dim3 block, void (*run)(void *), void *closure) {
    const int n = (int)(block.x * block.y * block.z);
    if (n > kMaxThreads) fatal("kernel %s: %d threads per block", kernel, n);
    if (G.fibers.size() < (size_t)n) {
        const size_t had = G.fibers.size();
        G.fibers.resize((size_t)n);
        for (size_t i = had; i < (size_t)n; i++) G.fibers[i].stack = new_stack();
    }
    G.grid_dim = grid;
    G.block_dim = block;
    G.run = run;
    G.closure = closure;
    G.kernel = kernel;
    const int64_t nb = (int64_t)grid.x * grid.y * grid.z;
    /* Blocks in a shuffled order too (a strided pick: a full permutation of 2^31 blocks
     * would not fit). */
    const int mode = order_mode();
    int64_t stride = 1, start = 0;
    if (mode == 2 && nb > 1) {
        do stride = (int64_t)(next_rand() % (uint64_t)nb) | 1;
        while (std::gcd(stride, nb) != 1);
        start = (int64_t)(next_rand() % (uint64_t)nb);
    }
    for (int64_t k = 0; k < nb; k++) {
        int64_t b = mode == 1 ? nb - 1 - k : (start + k * stride) % nb;
        G.block.x = (unsigned)(b % grid.x);
        G.block.y = (unsigned)(b / grid.x % grid.y);
        G.block.z = (unsigned)(b / ((int64_t)grid.x * grid.y));
        run_block(n);
    }
    G.run = nullptr;
    G.closure = nullptr;
}

const uint3 &thread_idx() { return self("threadIdx")->tid; }
const uint3 &block_idx() {
    self("blockIdx");
    return G.block;
}
const dim3 &block_dim() {
    self("blockDim");
    return G.block_dim;
}
const dim3 &grid_dim() {
    self("gridDim");
    return G.grid_dim;
}

void syncthreads(const char *file, int line) {
    self("__syncthreads")->pred = 0;
    wait_at(AT_SYNC, file, line);
}

int syncthreads_count(const char *file, int line, int pred) {
    self("__syncthreads_count")->pred = pred != 0;
    wait_at(AT_SYNC, file, line);
    return G.cur->result;
}

unsigned ballot_sync(const char *file, int line, unsigned mask, int pred) {
    fiber *f = self("__ballot_sync");
    if (!(mask >> (f->linear & 31) & 1u)) fatal("%s:%d: __ballot_sync by a lane not in its mask 0x%x", file, line, mask);
    f->pred = pred != 0;
    f->mask = mask;
    wait_at(AT_BALLOT, file, line);
    return (unsigned)G.cur->result;
}

uint64_t shfl_down_sync(const char *file, int line, unsigned mask, uint64_t bits, unsigned delta) {
    fiber *f = self("__shfl_down_sync");
    if (!(mask >> (f->linear & 31) & 1u))
        fatal("%s:%d: __shfl_down_sync by a lane not in its mask 0x%x", file, line, mask);
    f->bits = bits;
    f->mask = mask;
    f->delta = delta;
    wait_at(AT_SHFL, file, line);
    return G.cur->bits;
}

}  // namespace remat_emu
