/* A planted delay for "where the time goes": every sem_post() busy-waits first.
 *
 * Loaded with LD_PRELOAD into a Python process, it slows the release of every
 * threading lock on CPython builds whose locks are POSIX semaphores (3.11: the
 * lock an Event's Condition holds, the waiter's own lock), by
 * $WAKELAB_SLOW_SEM_POST_NS nanoseconds (default 1,000,000: 1 ms), spent on the
 * CPU in the caller, with whatever the caller holds (the GIL included) still
 * held.  The notifier meets it inside Event.set() before the kernel wakes the
 * waiter, so a traced run must credit it to the notify path, by its size.
 *
 * Built by bench/_plants.py: gcc -O2 -shared -fPIC slow_sem_post.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

static int (*real_sem_post)(sem_t *);
static long long spin_ns = 1000000;

__attribute__((constructor)) static void init(void) {
    const char *env = getenv("WAKELAB_SLOW_SEM_POST_NS");
    if (env != NULL && *env != '\0')
        spin_ns = atoll(env);
    real_sem_post = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_post");
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int sem_post(sem_t *sem) {
    long long end = now_ns() + spin_ns;
    while (now_ns() < end) {
    }
    if (real_sem_post == NULL)
        real_sem_post = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_post");
    return real_sem_post(sem);
}
