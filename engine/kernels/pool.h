/* The kernel's own worker pool: every parallel loop of the kernel runs through `pool_for`.
 *
 * Owns the worker threads (started on first use, kept for the process), how a loop's items
 * are shared (chunks claimed one at a time from a counter) and how an idle worker waits
 * (a short spin, then a futex sleep). Does not own what a loop computes, or how many threads
 * a call asks for (the callers; `ortops.h` caps decode calls).
 *
 * Why not OpenMP: a decode step makes ~100 parallel calls, and an OpenMP region ends at a
 * barrier every thread of its team must reach, with its static schedule handing each thread
 * its share up front. Beside a busy program a worker is often descheduled, and then every
 * region waits a scheduler slice for it: a 0.5B decoded ~6 tok/s on two threads beside two
 * busy processes, against ~16-23 on one. Here:
 * - the caller never waits for a worker that has not arrived: it claims chunks itself from
 *   the first one, a worker that wakes late joins for what is left, or finds nothing and
 *   goes back to waiting; the caller waits only for chunks a worker has claimed and not yet
 *   finished, so a descheduled worker costs at most the chunk it holds;
 * - dynamic chunks: a slow thread simply does fewer of them;
 * - an idle worker spins ~POOL_SPIN_US (most gaps between two of a step's calls are
 *   shorter), then sleeps on a futex (Linux) or a condition variable (elsewhere), so a quiet
 *   app holds no core; the caller, waiting for a chunk a worker holds, spins POOL_WAIT_US,
 *   then sleeps too. Longer spins burn the share of a core a busy machine gives us: beside
 *   two busy processes 200 us spins and a spinning caller were measured slower (13-15 tok/s
 *   against 14-16 on the real 0.5B), and idle no faster. Apple's clang builds it (no OpenMP).
 * A row's result never depends on which thread computed it or how the items were chunked
 * (every loop body computes each item alone), so output is bit-identical at any thread count
 * and any timing (tests/engine/kernels/test_kernel_threads.py, with `hearth_pool_delay`
 * holding one worker in every chunk it claims).
 *
 * Several callers at once (two ONNX Runtime sessions, the app's embedding beside a reply):
 * POOL_COUNT pools, each held by one caller at a time; a caller that finds every pool held
 * runs its loop alone. A loop inside a loop body runs alone too (the experts' outer loop). */
#ifndef HEARTH_POOL_H
#define HEARTH_POOL_H

#include <errno.h>
#include <sched.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#if defined(__linux__) && !defined(HEARTH_POOL_CONDVAR)  /* the condvar form: elsewhere, or tests */
#define POOL_FUTEX 1
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define POOL_MAX_THREADS 64
#define POOL_COUNT 4
#define POOL_SPIN_US 50  /* an idle worker's spin before it sleeps: most gaps between a step's calls */
#define POOL_WAIT_US 20  /* the caller's spin for a worker's last chunk before it sleeps */

typedef void (*PoolFn)(void *ctx, int64_t begin, int64_t end, int slot);

typedef struct {
    /* The job, written by its caller before `ticket` publishes it; read by workers with
     * relaxed atomics and trusted only when their claim (a CAS on `ticket`) succeeds. */
    PoolFn fn;
    void *ctx;
    int64_t n, grain, chunks;
    int want;          /* threads the job may use, the caller's slot 0 included */
    uint64_t ticket;   /* generation << 32 | the next chunk to claim */
    uint32_t done;     /* chunks finished (a futex word: the caller may sleep on it) */
    int caller_waits;  /* the caller is asleep on `done` */
    uint32_t gen;      /* the futex word: bumped once per job, after `ticket` */
    int sleepers;      /* workers asleep on `gen` */
    int started;       /* worker threads started (slots 1..started) */
    pthread_mutex_t owner;  /* held by the caller whose job the pool runs */
    pthread_mutex_t sleep_lock;  /* without futexes: `gen` changes and waits under it */
    pthread_cond_t wake;
} Pool;

static Pool pools[POOL_COUNT];
static pthread_once_t pools_once = PTHREAD_ONCE_INIT;
static __thread int in_pool;  /* running a loop body: a nested loop runs alone */
static int pool_spin_us = POOL_SPIN_US, pool_wait_us = POOL_WAIT_US;
static int delay_slot = -1, delay_us;  /* test hook: `hearth_pool_delay` */

static void pools_init(void) {
    for (int i = 0; i < POOL_COUNT; i++) {
        pthread_mutex_init(&pools[i].owner, NULL);
        pthread_mutex_init(&pools[i].sleep_lock, NULL);
        pthread_cond_init(&pools[i].wake, NULL);
    }
}

/* Test hook: the worker of `slot` (1 and up; -1: none) sleeps `us` microseconds in every
 * chunk it claims, before computing it: a worker descheduled while it holds work. */
void hearth_pool_delay(int slot, int us) {
    __atomic_store_n(&delay_us, us, __ATOMIC_RELAXED);
    __atomic_store_n(&delay_slot, slot, __ATOMIC_RELAXED);
}

/* An idle worker's spin before it sleeps, in microseconds (0: sleep at once): the thread
 * governor's choice (`engine.kernels.governor.worker_spin`), and benches'. */
void hearth_pool_spin(int us) { __atomic_store_n(&pool_spin_us, us < 0 ? 0 : us, __ATOMIC_RELAXED); }
int hearth_pool_spin_us(void) { return __atomic_load_n(&pool_spin_us, __ATOMIC_RELAXED); }

/* The caller's spin for a chunk a worker still holds before it sleeps, in microseconds. */
void hearth_pool_wait(int us) { __atomic_store_n(&pool_wait_us, us < 0 ? 0 : us, __ATOMIC_RELAXED); }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void gen_wait(Pool *p, uint32_t seen) {
#ifdef POOL_FUTEX
    syscall(SYS_futex, &p->gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    pthread_mutex_lock(&p->sleep_lock);
    while (__atomic_load_n(&p->gen, __ATOMIC_SEQ_CST) == seen)
        pthread_cond_wait(&p->wake, &p->sleep_lock);
    pthread_mutex_unlock(&p->sleep_lock);
#endif
}

static void gen_bump(Pool *p, int waiters) {
#ifdef POOL_FUTEX
    __atomic_add_fetch(&p->gen, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0)
        syscall(SYS_futex, &p->gen, FUTEX_WAKE_PRIVATE, waiters, NULL, NULL, 0);
#else
    (void)waiters;
    pthread_mutex_lock(&p->sleep_lock);
    __atomic_add_fetch(&p->gen, 1, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->sleep_lock);
#endif
}

/* The caller's wait for the chunks workers hold, and its wake-up. */
static void done_wait(Pool *p, uint32_t seen) {
#ifdef POOL_FUTEX
    syscall(SYS_futex, &p->done, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    pthread_mutex_lock(&p->sleep_lock);
    while (__atomic_load_n(&p->done, __ATOMIC_SEQ_CST) == seen)
        pthread_cond_wait(&p->wake, &p->sleep_lock);
    pthread_mutex_unlock(&p->sleep_lock);
#endif
}

static void done_wake(Pool *p) {
#ifdef POOL_FUTEX
    syscall(SYS_futex, &p->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    pthread_mutex_lock(&p->sleep_lock);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->sleep_lock);
#endif
}

/* Run one claimed chunk and count it done. */
static void run_chunk(Pool *p, PoolFn fn, void *ctx, int64_t c, int64_t n, int64_t grain,
                      int slot) {
    const int64_t begin = c * grain, end = begin + grain < n ? begin + grain : n;
    if (slot != 0 && slot == __atomic_load_n(&delay_slot, __ATOMIC_RELAXED)) {
        const int us = __atomic_load_n(&delay_us, __ATOMIC_RELAXED);
        struct timespec d = {us / 1000000, (long)(us % 1000000) * 1000};
        nanosleep(&d, NULL);
    }
    fn(ctx, begin, end, slot);
    __atomic_add_fetch(&p->done, 1, __ATOMIC_SEQ_CST);
    if (slot != 0 && __atomic_load_n(&p->caller_waits, __ATOMIC_SEQ_CST))
        done_wake(p);
}

/* A worker's part of the current job: chunks while there are any, each claim checked. */
static void worker_join(Pool *p, int slot) {
    for (;;) {
        const uint64_t t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
        const PoolFn fn = __atomic_load_n(&p->fn, __ATOMIC_RELAXED);
        void *const ctx = __atomic_load_n(&p->ctx, __ATOMIC_RELAXED);
        const int64_t n = __atomic_load_n(&p->n, __ATOMIC_RELAXED);
        const int64_t grain = __atomic_load_n(&p->grain, __ATOMIC_RELAXED);
        const int64_t chunks = __atomic_load_n(&p->chunks, __ATOMIC_RELAXED);
        const int want = __atomic_load_n(&p->want, __ATOMIC_RELAXED);
        const int64_t c = (int64_t)(t & 0xffffffffu);
        if (slot >= want || c >= chunks) return;
        /* The claim: the ticket unchanged since the fields were read, so they are this
         * job's (its caller rewrites them only after every chunk is done). */
        uint64_t expected = t;
        if (__atomic_compare_exchange_n(&p->ticket, &expected, t + 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            run_chunk(p, fn, ctx, c, n, grain, slot);
    }
}

static void *worker_main(void *arg) {
    Pool *p = pools + ((intptr_t)arg >> 8);
    const int slot = (int)((intptr_t)arg & 0xff);
    in_pool = 1;
    uint32_t seen = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
        if (g == seen) {
            const int64_t until = now_ns() + (int64_t)__atomic_load_n(&pool_spin_us, __ATOMIC_RELAXED) * 1000;
            for (int i = 0; (g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE)) == seen; i++) {
                if ((i & 63) == 63 && now_ns() > until) break;
                cpu_relax();
            }
        }
        if (g == seen) {  /* nothing came: sleep until a job does */
            __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&p->gen, __ATOMIC_SEQ_CST) == seen) gen_wait(p, seen);
            __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        seen = g;
        worker_join(p, slot);
    }
    return NULL;
}

/* Start workers up to slot `want - 1`; how many threads the pool can give (at least 1). */
static int pool_grow(Pool *p, int want) {
    while (p->started + 1 < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        const intptr_t arg = ((intptr_t)(p - pools) << 8) | (p->started + 1);
        const int rc = pthread_create(&t, &attr, worker_main, (void *)arg);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;  /* fewer threads: the loop still runs, on those there are */
        p->started++;
    }
    return p->started + 1 < want ? p->started + 1 : want;
}

/* fn(ctx, begin, end, slot) over [0, n) in chunks of `grain` items, on up to `threads`
 * threads: the caller (slot 0) and the pool's workers (slots 1..threads-1). Returns when
 * every item is done. Each slot is one thread at a time, so slot-indexed scratch is safe. */
static void pool_for(int threads, int64_t n, int64_t grain, PoolFn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    const int64_t chunks = (n + grain - 1) / grain;
    if (threads > POOL_MAX_THREADS) threads = POOL_MAX_THREADS;
    if (threads > chunks) threads = (int)chunks;
    Pool *p = NULL;
    if (threads > 1 && !in_pool && chunks < ((int64_t)1 << 31)) {
        pthread_once(&pools_once, pools_init);
        for (int i = 0; i < POOL_COUNT && p == NULL; i++)
            if (pthread_mutex_trylock(&pools[i].owner) == 0) p = pools + i;
    }
    if (p == NULL || (threads = pool_grow(p, threads)) < 2) {  /* alone */
        const int outer = in_pool;
        in_pool = 1;
        fn(ctx, 0, n, 0);
        in_pool = outer;
        if (p != NULL) pthread_mutex_unlock(&p->owner);
        return;
    }
    __atomic_store_n(&p->fn, fn, __ATOMIC_RELAXED);
    __atomic_store_n(&p->ctx, ctx, __ATOMIC_RELAXED);
    __atomic_store_n(&p->n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&p->grain, grain, __ATOMIC_RELAXED);
    __atomic_store_n(&p->chunks, chunks, __ATOMIC_RELAXED);
    __atomic_store_n(&p->want, threads, __ATOMIC_RELAXED);
    __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
    const uint64_t generation = (__atomic_load_n(&p->ticket, __ATOMIC_RELAXED) >> 32) + 1;
    __atomic_store_n(&p->ticket, generation << 32, __ATOMIC_RELEASE);
    gen_bump(p, threads - 1);
    in_pool = 1;
    for (;;) {  /* the caller claims too, from the first chunk on */
        const int64_t c = (int64_t)(__atomic_fetch_add(&p->ticket, 1, __ATOMIC_ACQ_REL) & 0xffffffffu);
        if (c >= chunks) break;
        run_chunk(p, fn, ctx, c, n, grain, 0);
    }
    in_pool = 0;
    /* Only chunks a worker claimed and has not finished are left: wait for those, a short
     * spin (a chunk is a few microseconds), then asleep: a worker that holds one has been
     * descheduled, and a spinning caller would only burn the core's share it needs next. */
    uint32_t seen;
    const int64_t until = now_ns() + (int64_t)__atomic_load_n(&pool_wait_us, __ATOMIC_RELAXED) * 1000;
    for (int i = 0; (seen = __atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) < chunks; i++) {
        if ((i & 63) != 63 || now_ns() < until) {
            cpu_relax();
            continue;
        }
        __atomic_store_n(&p->caller_waits, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&p->done, __ATOMIC_SEQ_CST) == seen) done_wait(p, seen);
        __atomic_store_n(&p->caller_waits, 0, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&p->owner);
}

#endif
