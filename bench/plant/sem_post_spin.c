/* A plant in the notify path: every sem_post() spins first, for the A/B calibration's power check.
 *
 * CPython's locks are POSIX semaphores on Linux: Event.set() and Queue.put() release them with
 * sem_post(), so spinning there makes every wake of `event` and `queue` slower by the spin (once
 * per sem_post in the notify path).  Built and used by bench/ab_calibration.py:
 *
 *     gcc -O2 -shared -fPIC -o sem_post_spin.so sem_post_spin.c -ldl
 *     wakelab ab PY PY --arms event --env head:LD_PRELOAD=$PWD/sem_post_spin.so \
 *                      --env head:WAKELAB_PLANT_SPIN_NS=5000
 *
 * WAKELAB_PLANT_SPIN_NS: the spin in ns (default 5000); read once, at the first call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

static int (*real_sem_post)(sem_t *);
static long spin_ns = -1;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int sem_post(sem_t *sem) {
    if (real_sem_post == NULL) {
        real_sem_post = (int (*)(sem_t *))dlsym(RTLD_NEXT, "sem_post");
    }
    if (spin_ns < 0) {
        const char *text = getenv("WAKELAB_PLANT_SPIN_NS");
        spin_ns = text != NULL ? atol(text) : 5000;
    }
    if (spin_ns > 0) {
        long end = now_ns() + spin_ns;
        while (now_ns() < end) {
        }
    }
    return real_sem_post(sem);
}
