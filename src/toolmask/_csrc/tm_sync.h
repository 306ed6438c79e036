/* Locks of the kernel's shared structures (see docs/masks.md, "Filling a batch").
 *
 * An automaton, its states' transition memos and every mask cache over it are guarded by one
 * reader-writer lock (TmLock, in the automaton's Python object): a fill whose state's mask is
 * cached reads under the shared lock, so rows of one grammar are copied in parallel; anything
 * that may add a state, a position, a memo entry or a cached mask holds it exclusively. A
 * vocabulary's shared run tables have a mutex of their own (TmMutex in Vocab), taken inside
 * the automaton's lock and never the other way round, and never while a Python object is
 * created. Tables a cached mask holds are reference counted, so a reader of a cached mask
 * never needs the vocabulary's lock.
 *
 * The exclusive lock is recursive for the thread that holds it (an entry point may run a
 * finalizer that calls into the same automaton). Where POSIX threads are missing (Windows
 * builds), the locks are no-ops and batches run on the calling thread with the GIL held.
 */
#ifndef TM_SYNC_H
#define TM_SYNC_H

#if !defined(_WIN32)
#define TM_THREADS 1
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#else
#define TM_THREADS 0
#endif

/* a distinct value per thread: the address of a thread-local byte */
static inline uintptr_t tm_self(void) {
    static __thread char me;
    return (uintptr_t)&me;
}

typedef struct {
#if TM_THREADS
    pthread_rwlock_t rw;
#endif
    uintptr_t owner; /* the thread holding it exclusively, or 0 (atomic) */
    int depth;       /* exclusive re-entries by the owner */
} TmLock;

static void tl_init(TmLock *l) {
#if TM_THREADS
    pthread_rwlock_init(&l->rw, NULL);
#endif
    l->owner = 0;
    l->depth = 0;
}

static void tl_destroy(TmLock *l) {
#if TM_THREADS
    pthread_rwlock_destroy(&l->rw);
#else
    (void)l;
#endif
}

static inline void tl_wlock(TmLock *l) {
    uintptr_t me = tm_self();
    if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) {
        l->depth++;
        return;
    }
#if TM_THREADS
    pthread_rwlock_wrlock(&l->rw);
#endif
    __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
    l->depth = 1;
}

/* 1 when taken (or re-entered), 0 when another thread holds it in any mode */
static inline int tl_trywlock(TmLock *l) {
    uintptr_t me = tm_self();
    if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == me) {
        l->depth++;
        return 1;
    }
#if TM_THREADS
    if (pthread_rwlock_trywrlock(&l->rw) != 0) return 0;
#endif
    __atomic_store_n(&l->owner, me, __ATOMIC_RELAXED);
    l->depth = 1;
    return 1;
}

static inline void tl_wunlock(TmLock *l) {
    if (--l->depth) return;
    __atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
#if TM_THREADS
    pthread_rwlock_unlock(&l->rw);
#endif
}

/* shared mode; returns how to release it (tl_runlock): a thread that holds the lock
 * exclusively re-enters it instead */
static inline int tl_rlock(TmLock *l) {
    if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == tm_self()) {
        l->depth++;
        return 1;
    }
#if TM_THREADS
    pthread_rwlock_rdlock(&l->rw);
#endif
    return 0;
}

static inline void tl_runlock(TmLock *l, int how) {
    if (how) {
        tl_wunlock(l);
        return;
    }
#if TM_THREADS
    pthread_rwlock_unlock(&l->rw);
#else
    (void)l;
#endif
}

typedef struct {
#if TM_THREADS
    pthread_mutex_t mu;
#else
    int unused;
#endif
} TmMutex;

static inline void tm_mutex_init(TmMutex *m) {
#if TM_THREADS
    pthread_mutex_init(&m->mu, NULL);
#else
    (void)m;
#endif
}
static inline void tm_mutex_destroy(TmMutex *m) {
#if TM_THREADS
    pthread_mutex_destroy(&m->mu);
#else
    (void)m;
#endif
}
static inline void tm_lock(TmMutex *m) {
#if TM_THREADS
    pthread_mutex_lock(&m->mu);
#else
    (void)m;
#endif
}
static inline void tm_unlock(TmMutex *m) {
#if TM_THREADS
    pthread_mutex_unlock(&m->mu);
#else
    (void)m;
#endif
}

#endif
