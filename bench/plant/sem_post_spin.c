/* A plant in the notify path: every sem_post() busy-waits first.
 *
 * CPython's locks are POSIX semaphores on Linux up to 3.12: Event.set() and Queue.put() release
 * them with sem_post(), so spinning there makes every wake of `event` and `queue` slower by the
 * spin, spent on the CPU in the caller with whatever it holds (the GIL included) still held.
 * Loaded with LD_PRELOAD.  Two users, one plant (built by bench/_plants.py:
 * gcc -O2 -shared -fPIC -o sem_post_spin.so sem_post_spin.c -ldl):
 *
 * - bench/ab_calibration.py --sem-post US: the A/B gate's power against a few µs on head;
 * - bench/trace_attribution.py and tests/test_trace_reblocks.py: a traced run must credit a 1 ms
 *   spin to the notify path, by its size.
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
