/* A small pool of native threads for batch fills (see docs/masks.md, "Filling a batch").
 *
 * pool_run(fn, arg, extra) runs fn(arg) on the calling thread and on up to `extra` pool
 * threads at once; fn divides the work itself (atomic counters), so a worker that wakes late
 * finds less or nothing to do, and pool_run returns as soon as the caller's share and the
 * shares of the workers that joined are done: it never waits for a worker that has not
 * woken up yet (a worker that wakes after the job is closed goes back to sleep).
 *
 * Workers are started on first use, up to POOL_MAX, and sleep on a condition variable
 * between jobs; they touch no Python object. One job runs at a time: a second caller while
 * the pool is busy runs its job on its own thread. After fork() the child starts with no
 * workers (pthread_atfork).
 */
#ifndef TM_POOL_H
#define TM_POOL_H

#define POOL_MAX 64

typedef void (*PoolFn)(void *arg);

#if TM_THREADS

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv, done;
    int n; /* workers started */
    uint64_t gen;
    PoolFn fn;
    void *arg;
    int want, joined, finished, closed, busy;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, NULL, NULL, 0, 0, 0, 1, 0};

static void *pool_worker(void *unused) {
    (void)unused;
    pthread_mutex_lock(&pool.mu);
    uint64_t seen = pool.gen;
    for (;;) {
        while (pool.gen == seen) pthread_cond_wait(&pool.cv, &pool.mu);
        seen = pool.gen;
        if (pool.closed || pool.joined >= pool.want) continue;
        pool.joined++;
        PoolFn fn = pool.fn;
        void *arg = pool.arg;
        pthread_mutex_unlock(&pool.mu);
        fn(arg);
        pthread_mutex_lock(&pool.mu);
        pool.finished++;
        if (pool.closed && pool.finished == pool.joined) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

/* start workers until n exist (called with pool.mu held); the number that exist */
static int pool_grow(int n) {
    if (n > POOL_MAX) n = POOL_MAX;
    while (pool.n < n) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 1 << 20);
        int rc = pthread_create(&t, &attr, pool_worker, NULL);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        pool.n++;
    }
    return pool.n;
}

/* the threads that ran fn (1 + the workers that joined) */
static int pool_run(PoolFn fn, void *arg, int extra) {
    if (extra <= 0) {
        fn(arg);
        return 1;
    }
    pthread_mutex_lock(&pool.mu);
    if (pool.busy) { /* another caller's job: run this one alone */
        pthread_mutex_unlock(&pool.mu);
        fn(arg);
        return 1;
    }
    int have = pool_grow(extra);
    if (have < extra) extra = have;
    if (extra <= 0) {
        pthread_mutex_unlock(&pool.mu);
        fn(arg);
        return 1;
    }
    pool.busy = 1;
    pool.fn = fn;
    pool.arg = arg;
    pool.want = extra;
    pool.joined = pool.finished = pool.closed = 0;
    pool.gen++;
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
    fn(arg);
    pthread_mutex_lock(&pool.mu);
    pool.closed = 1;
    while (pool.finished < pool.joined) pthread_cond_wait(&pool.done, &pool.mu);
    int used = 1 + pool.joined;
    pool.fn = NULL;
    pool.arg = NULL;
    pool.busy = 0;
    pthread_mutex_unlock(&pool.mu);
    return used;
}

static void pool_after_fork_child(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.cv, NULL);
    pthread_cond_init(&pool.done, NULL);
    pool.n = 0;
    pool.busy = 0;
    pool.closed = 1;
    pool.fn = NULL;
    pool.arg = NULL;
}

static void pool_init(void) { pthread_atfork(NULL, NULL, pool_after_fork_child); }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    sched_yield();
#endif
}

static inline void tm_yield(void) { sched_yield(); }

#else /* no threads: everything on the caller */

static int pool_run(PoolFn fn, void *arg, int extra) {
    (void)extra;
    fn(arg);
    return 1;
}
static void pool_init(void) {}
static inline void cpu_relax(void) {}
static inline void tm_yield(void) {}

#endif

#endif
