/*
 * wakelab_floor.c -- the native floor of wakelab.
 *
 * The same wake experiments as wakelab's Python arms, done in C, so that a
 * report can put the interpreter's cost beside what the kernel and libc cost
 * on the same machine, under the same conditions.
 *
 * Placement: notifier_cpu=C pins the notifier (the main thread; for the
 * single-threaded self-signal and sigaction experiments, the only thread)
 * to CPU C, waiter_cpu=C pins the waiter thread, both with
 * pthread_setaffinity_np; -1 (the default) leaves the inherited mask alone.
 * Each side notes the CPU it last ran on (sched_getcpu) at the end of its
 * loop, and the output says so (the "ran-on" line).
 *
 * Clock: clock_gettime(CLOCK_MONOTONIC), the clock behind Python's
 * time.perf_counter_ns() on Linux, so the figures are directly comparable.
 *
 * Definitions follow wakelab's DESIGN notes:
 *   t0  the notifier's clock reading immediately before the notify call;
 *       the planted delay (a busy-wait) sits between t0 and the notify;
 *   t1  the waiter's clock reading as the first statement after its wait
 *       returns (or the first statement of the signal handler);
 *   blocked waiters announce that they are about to wait, then the notifier
 *   lets settle_us pass before t0; every wait is bounded by timeout_ms and a
 *   wake that does not arrive is printed as "lost".  Handshake waits (outside
 *   the timed window) are bounded too; if one expires the program reports it
 *   on stderr and exits with status 3, so it always ends.
 *
 * Usage:  wakelab_floor EXPERIMENT [key=value ...]
 *   keys: n warmup settle_us timeout_ms planted_delay_us install_n rounds
 *         warmup_rounds notifier_cpu waiter_cpu (-1: not pinned)
 *         lose_every (fault injection for tests: the notifier skips every
 *         lose_every-th notify, so that wake is lost)
 *   EXPERIMENT "selftest" only prints "wakelab-floor 2 ok".
 *
 * Output (stdout), format version 2 (version 1 had no "ran-on" line):
 *   wakelab-floor 2 latency EXPERIMENT COUNT    then COUNT lines, each a
 *       latency in ns or "lost", in the order taken (warm-up wakes included;
 *       the Python side drops them), then the ran-on line, then "end COUNT".
 *   wakelab-floor 2 rate EXPERIMENT COUNT       then COUNT lines
 *       "ROUND_NS BASELINE_NS" (warm-up rounds included), then the ran-on
 *       line, then "end COUNT".
 *   The ran-on line is "ran-on notifier=CPU waiter=CPU" for the
 *   cross-thread experiments and "ran-on notifier=CPU" for the
 *   single-threaded ones; CPU is "-" when sched_getcpu() failed.
 * Exit status: 0 ok, 2 usage error, 3 the experiment itself failed.
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_FORMAT 2
#define LOST INT64_MIN
/* Handshakes outside the timed window get the wake timeout plus this. */
#define HANDSHAKE_SLACK_MS 5000

typedef struct {
    long n;
    long warmup;
    long settle_us;
    long timeout_ms;
    long planted_delay_us;
    long install_n;
    long rounds;
    long warmup_rounds;
    long lose_every;
    long notifier_cpu; /* -1: not pinned */
    long waiter_cpu;   /* -1: not pinned */
} params_t;

static params_t P = {200, 10, 1000, 1000, 0, 20000, 7, 1, 0, -1, -1};

/* The CPU each side last ran on, read at the end of its loop (-1: unknown). */
static int notifier_cpu_seen = -1;
static int waiter_cpu_seen = -1;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fail(const char *what, int err)
{
    if (err)
        fprintf(stderr, "wakelab_floor: %s: %s\n", what, strerror(err));
    else
        fprintf(stderr, "wakelab_floor: %s\n", what);
    exit(3);
}

static struct timespec monotonic_after_ms(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* Milliseconds left until deadline_ns, rounded up, never negative. */
static int ms_left(int64_t deadline_ns)
{
    int64_t left = deadline_ns - now_ns();
    if (left <= 0)
        return 0;
    left = (left + 999999) / 1000000;
    return left > INT_MAX ? INT_MAX : (int)left;
}

static void sleep_us(long us)
{
    if (us <= 0)
        return;
    struct timespec until;
    int64_t deadline = now_ns() + (int64_t)us * 1000;
    until.tv_sec = deadline / 1000000000;
    until.tv_nsec = deadline % 1000000000;
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL)) == EINTR)
        ;
    if (rc)
        fail("clock_nanosleep", rc);
}

/* Pin the calling thread to cpu (no-op for -1). */
static void pin_self(long cpu, const char *role)
{
    if (cpu < 0)
        return;
    if (cpu >= CPU_SETSIZE) {
        fprintf(stderr, "wakelab_floor: pinning the %s to CPU %ld: beyond CPU_SETSIZE\n", role, cpu);
        exit(3);
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc) {
        fprintf(stderr, "wakelab_floor: pinning the %s to CPU %ld: %s\n", role, cpu, strerror(rc));
        exit(3);
    }
}

/* Between t0 and the notify: a busy-wait, so the delay itself is precise. */
static void plant_delay(int64_t t0)
{
    if (P.planted_delay_us > 0) {
        int64_t until = t0 + (int64_t)P.planted_delay_us * 1000;
        while (now_ns() < until)
            ;
    }
}

/* Fault injection for tests: skip this wake's notify? (i counts from 0) */
static int skip_notify(long i)
{
    return P.lose_every > 0 && (i + 1) % P.lose_every == 0;
}

/* Wait for fd to become readable; t1 is read right after poll() returns.
 * Returns t1, or 0 when the timeout passed first. */
static int64_t poll_readable(int fd, long timeout_ms)
{
    struct pollfd pfd;
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    int left = ms_left(deadline);
    for (;;) {
        pfd.fd = fd;
        pfd.events = POLLIN;
        pfd.revents = 0;
        int rc = poll(&pfd, 1, left);
        int64_t t1 = now_ns();
        if (rc > 0)
            return t1;
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            fail("poll", errno);
        left = ms_left(deadline);
    }
}

static void drain_fd(int fd)
{
    char buf[64];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got > 0)
            continue;
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            fail("read (drain)", errno);
        return;
    }
}

/* ------------------------------------------------------------------ */
/* Cross-thread experiments: one persistent blocked waiter thread.      */

typedef struct {
    void (*setup)(void);
    void (*reset)(void);   /* notifier side, before the waiter is let go */
    void (*prepare)(void); /* waiter side, before it announces itself */
    int64_t (*wait)(long timeout_ms); /* returns t1, or 0 on timeout */
    void (*notify)(void);
    void (*teardown)(void);
} thread_experiment_t;

static const thread_experiment_t *EXP;
static pthread_t waiter_thread;

/* Handshake state, all under ctl_lock. */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_cond;
static int ctl_go, ctl_ready, ctl_done, ctl_stop, ctl_failed;
static int64_t ctl_t1;

static void init_monotonic_cond(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (!rc)
        rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (!rc)
        rc = pthread_cond_init(cond, &attr);
    if (rc)
        fail("pthread_cond_init", rc);
    pthread_condattr_destroy(&attr);
}

/* With ctl_lock held: wait until *flag or ctl_failed; 0 if the deadline passed. */
static int ctl_wait_for(const int *flag, const struct timespec *deadline)
{
    while (!*flag && !ctl_failed) {
        int rc = pthread_cond_timedwait(&ctl_cond, &ctl_lock, deadline);
        if (rc == ETIMEDOUT)
            return *flag;
        if (rc)
            fail("pthread_cond_timedwait (handshake)", rc);
    }
    return *flag;
}

static void *waiter_main(void *unused)
{
    (void)unused;
    pin_self(P.waiter_cpu, "waiter");
    long handshake_ms = P.timeout_ms + HANDSHAKE_SLACK_MS;
    pthread_mutex_lock(&ctl_lock);
    for (;;) {
        struct timespec deadline = monotonic_after_ms(handshake_ms);
        while (!ctl_go && !ctl_stop) {
            int rc = pthread_cond_timedwait(&ctl_cond, &ctl_lock, &deadline);
            if (rc == ETIMEDOUT && !ctl_go && !ctl_stop) {
                ctl_failed = 1;
                pthread_cond_broadcast(&ctl_cond);
                pthread_mutex_unlock(&ctl_lock);
                return NULL;
            }
        }
        if (ctl_stop) {
            waiter_cpu_seen = sched_getcpu(); /* read by main after pthread_join */
            break;
        }
        ctl_go = 0;
        pthread_mutex_unlock(&ctl_lock);

        if (EXP->prepare)
            EXP->prepare();
        pthread_mutex_lock(&ctl_lock);
        ctl_ready = 1;
        pthread_cond_broadcast(&ctl_cond);
        pthread_mutex_unlock(&ctl_lock);

        int64_t t1 = EXP->wait(P.timeout_ms);

        pthread_mutex_lock(&ctl_lock);
        ctl_t1 = t1;
        ctl_done = 1;
        pthread_cond_broadcast(&ctl_cond);
    }
    pthread_mutex_unlock(&ctl_lock);
    return NULL;
}

static void run_thread_experiment(const thread_experiment_t *exp, int64_t *samples, long total)
{
    EXP = exp;
    /* Before pthread_create: the waiter starts from this mask, then re-pins itself. */
    pin_self(P.notifier_cpu, "notifier");
    init_monotonic_cond(&ctl_cond);
    if (exp->setup)
        exp->setup();
    int rc = pthread_create(&waiter_thread, NULL, waiter_main, NULL);
    if (rc)
        fail("pthread_create", rc);

    long handshake_ms = P.timeout_ms + HANDSHAKE_SLACK_MS;
    for (long i = 0; i < total; i++) {
        if (exp->reset)
            exp->reset();
        pthread_mutex_lock(&ctl_lock);
        ctl_ready = 0;
        ctl_done = 0;
        ctl_t1 = 0;
        ctl_go = 1;
        pthread_cond_broadcast(&ctl_cond);
        struct timespec deadline = monotonic_after_ms(handshake_ms);
        if (!ctl_wait_for(&ctl_ready, &deadline))
            fail("waiter thread did not announce itself", 0);
        pthread_mutex_unlock(&ctl_lock);

        sleep_us(P.settle_us);
        int64_t t0 = now_ns();
        plant_delay(t0);
        if (!skip_notify(i))
            exp->notify();

        pthread_mutex_lock(&ctl_lock);
        deadline = monotonic_after_ms(handshake_ms);
        if (!ctl_wait_for(&ctl_done, &deadline))
            fail("waiter thread did not return from its wait", 0);
        int64_t t1 = ctl_t1;
        pthread_mutex_unlock(&ctl_lock);
        samples[i] = t1 ? t1 - t0 : LOST;
    }
    notifier_cpu_seen = sched_getcpu();

    pthread_mutex_lock(&ctl_lock);
    ctl_stop = 1;
    pthread_cond_broadcast(&ctl_cond);
    pthread_mutex_unlock(&ctl_lock);
    rc = pthread_join(waiter_thread, NULL);
    if (rc)
        fail("pthread_join", rc);
    if (exp->teardown)
        exp->teardown();
}

/* native-condvar: flag + pthread condition variable (futex), like threading.Event. */

static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_cond;
static int cv_flag;

static void condvar_setup(void)
{
    init_monotonic_cond(&cv_cond);
}

static void condvar_reset(void)
{
    pthread_mutex_lock(&cv_lock);
    cv_flag = 0;
    pthread_mutex_unlock(&cv_lock);
}

static int64_t condvar_wait(long timeout_ms)
{
    struct timespec deadline = monotonic_after_ms(timeout_ms);
    int64_t t1 = 0;
    pthread_mutex_lock(&cv_lock);
    while (!cv_flag) {
        int rc = pthread_cond_timedwait(&cv_cond, &cv_lock, &deadline);
        t1 = now_ns();
        if (rc == ETIMEDOUT)
            break;
        if (rc)
            fail("pthread_cond_timedwait", rc);
    }
    int ok = cv_flag;
    pthread_mutex_unlock(&cv_lock);
    if (ok && !t1) /* the flag was already set: no wait happened */
        t1 = now_ns();
    return ok ? t1 : 0;
}

static void condvar_notify(void)
{
    pthread_mutex_lock(&cv_lock);
    cv_flag = 1;
    pthread_cond_signal(&cv_cond);
    pthread_mutex_unlock(&cv_lock);
}

static const thread_experiment_t CONDVAR = {
    condvar_setup, condvar_reset, NULL, condvar_wait, condvar_notify, NULL,
};

/* native-pipe: one byte through a pipe; the waiter sits in poll(). */

static int pipe_fds[2] = {-1, -1};

static void pipe_setup(void)
{
    if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK))
        fail("pipe2", errno);
}

static void pipe_reset(void)
{
    drain_fd(pipe_fds[0]);
}

static int64_t pipe_wait(long timeout_ms)
{
    int64_t t1 = poll_readable(pipe_fds[0], timeout_ms);
    if (t1) {
        char byte;
        ssize_t got;
        while ((got = read(pipe_fds[0], &byte, 1)) < 0 && errno == EINTR)
            ;
        if (got != 1)
            fail("read (pipe)", got < 0 ? errno : 0);
    }
    return t1;
}

static void pipe_notify(void)
{
    ssize_t put;
    while ((put = write(pipe_fds[1], "x", 1)) < 0 && errno == EINTR)
        ;
    if (put != 1)
        fail("write (pipe)", put < 0 ? errno : 0);
}

static void pipe_teardown(void)
{
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static const thread_experiment_t PIPE = {
    pipe_setup, pipe_reset, NULL, pipe_wait, pipe_notify, pipe_teardown,
};

/* native-eventfd: eventfd counter write; the waiter sits in poll(). */

static int event_fd = -1;

static void eventfd_setup(void)
{
    event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (event_fd < 0)
        fail("eventfd", errno);
}

static void eventfd_reset(void)
{
    drain_fd(event_fd);
}

static int64_t eventfd_wait(long timeout_ms)
{
    int64_t t1 = poll_readable(event_fd, timeout_ms);
    if (t1) {
        uint64_t value;
        ssize_t got;
        while ((got = read(event_fd, &value, sizeof value)) < 0 && errno == EINTR)
            ;
        if (got != (ssize_t)sizeof value)
            fail("read (eventfd)", got < 0 ? errno : 0);
    }
    return t1;
}

static void eventfd_notify(void)
{
    uint64_t one = 1;
    ssize_t put;
    while ((put = write(event_fd, &one, sizeof one)) < 0 && errno == EINTR)
        ;
    if (put != (ssize_t)sizeof one)
        fail("write (eventfd)", put < 0 ? errno : 0);
}

static void eventfd_teardown(void)
{
    close(event_fd);
}

static const thread_experiment_t EVENTFD = {
    eventfd_setup, eventfd_reset, NULL, eventfd_wait, eventfd_notify, eventfd_teardown,
};

/* native-sigwait: pthread_kill(waiter, SIGUSR1); the waiter sits in
 * sigtimedwait() with SIGUSR1 blocked (blocked in every thread, so the
 * signal can only be taken by sigtimedwait). */

static sigset_t usr1_set;

static void noop_handler(int signum)
{
    (void)signum;
}

static void sigwait_setup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = noop_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL))
        fail("sigaction", errno);
    sigemptyset(&usr1_set);
    sigaddset(&usr1_set, SIGUSR1);
    /* Before pthread_create, so the waiter inherits the mask. */
    int rc = pthread_sigmask(SIG_BLOCK, &usr1_set, NULL);
    if (rc)
        fail("pthread_sigmask", rc);
}

static void sigwait_prepare(void)
{
    /* A signal that arrived after an earlier timeout is still pending for
     * this thread: take it now, outside the timed window. */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&usr1_set, NULL, &zero) == SIGUSR1)
        ;
}

static int64_t sigwait_wait(long timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    int64_t left = deadline - now_ns();
    for (;;) {
        struct timespec ts;
        if (left < 0)
            left = 0;
        ts.tv_sec = left / 1000000000;
        ts.tv_nsec = left % 1000000000;
        int rc = sigtimedwait(&usr1_set, NULL, &ts);
        int64_t t1 = now_ns();
        if (rc == SIGUSR1)
            return t1;
        if (rc < 0 && errno == EAGAIN)
            return 0;
        if (rc < 0 && errno != EINTR)
            fail("sigtimedwait", errno);
        left = deadline - now_ns();
    }
}

static void sigwait_notify(void)
{
    int rc = pthread_kill(waiter_thread, SIGUSR1);
    if (rc)
        fail("pthread_kill", rc);
}

static const thread_experiment_t SIGWAIT = {
    sigwait_setup, NULL, sigwait_prepare, sigwait_wait, sigwait_notify, NULL,
};

/* ------------------------------------------------------------------ */
/* native-self-signal: kill(getpid(), SIGUSR1) in a single-threaded
 * process; the handler stamps t1 and sets a flag the main thread spins on. */

static volatile sig_atomic_t self_seen;
static volatile int64_t self_t1;

static void self_handler(int signum)
{
    int64_t t1 = now_ns(); /* clock_gettime is async-signal-safe */
    (void)signum;
    self_t1 = t1;
    self_seen = 1;
}

static void run_self_signal(int64_t *samples, long total)
{
    pin_self(P.notifier_cpu, "notifier");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = self_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL))
        fail("sigaction", errno);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    /* The parent's mask is inherited: make sure SIGUSR1 is deliverable. */
    if (sigprocmask(SIG_UNBLOCK, &set, NULL))
        fail("sigprocmask", errno);

    pid_t pid = getpid();
    int64_t timeout_ns = (int64_t)P.timeout_ms * 1000000;
    for (long i = 0; i < total; i++) {
        self_seen = 0;
        self_t1 = 0;
        int64_t t0 = now_ns();
        plant_delay(t0);
        if (!skip_notify(i) && kill(pid, SIGUSR1))
            fail("kill", errno);
        while (!self_seen) {
            if (now_ns() - t0 > timeout_ns)
                break;
        }
        samples[i] = self_seen ? self_t1 - t0 : LOST;
    }
    notifier_cpu_seen = sched_getcpu();
}

/* ------------------------------------------------------------------ */
/* native-sigaction-install: rate of sigaction(SIGUSR1, ...) installs, each
 * round followed by the same loop with an empty body (the baseline). */

static void run_sigaction_install(int64_t *round_ns, int64_t *baseline_ns, long total)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = noop_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK; /* what CPython's signal.signal() passes */
    pin_self(P.notifier_cpu, "notifier");
    if (sigaction(SIGUSR1, NULL, &old))
        fail("sigaction (save)", errno);
    long n = P.install_n;
    for (long r = 0; r < total; r++) {
        int64_t t0 = now_ns();
        for (long i = 0; i < n; i++) {
            if (sigaction(SIGUSR1, &sa, NULL))
                fail("sigaction", errno);
        }
        int64_t t1 = now_ns();
        int64_t b0 = now_ns();
        for (long i = 0; i < n; i++) {
            /* Keeps the empty loop: the compiler may not delete it. */
            __asm__ __volatile__("" ::: "memory");
        }
        int64_t b1 = now_ns();
        round_ns[r] = t1 - t0;
        baseline_ns[r] = b1 - b0;
    }
    notifier_cpu_seen = sched_getcpu();
    if (sigaction(SIGUSR1, &old, NULL))
        fail("sigaction (restore)", errno);
}

/* ------------------------------------------------------------------ */
/* Command line and output                                              */

static void usage(const char *msg)
{
    fprintf(stderr,
            "wakelab_floor: %s\n"
            "usage: wakelab_floor EXPERIMENT [key=value ...]\n"
            "experiments: native-condvar native-pipe native-eventfd native-sigwait\n"
            "             native-self-signal native-sigaction-install selftest\n"
            "keys: n warmup settle_us timeout_ms planted_delay_us install_n rounds\n"
            "      warmup_rounds notifier_cpu waiter_cpu lose_every\n",
            msg);
    exit(2);
}

static void parse_param(const char *arg)
{
    static const struct {
        const char *key;
        long *slot;
        long min;
    } keys[] = {
        {"n", &P.n, 0},
        {"warmup", &P.warmup, 0},
        {"settle_us", &P.settle_us, 0},
        {"timeout_ms", &P.timeout_ms, 1},
        {"planted_delay_us", &P.planted_delay_us, 0},
        {"install_n", &P.install_n, 1},
        {"rounds", &P.rounds, 1},
        {"warmup_rounds", &P.warmup_rounds, 0},
        {"lose_every", &P.lose_every, 0},
        {"notifier_cpu", &P.notifier_cpu, -1},
        {"waiter_cpu", &P.waiter_cpu, -1},
    };
    const char *eq = strchr(arg, '=');
    if (!eq)
        usage("parameters are key=value");
    size_t keylen = (size_t)(eq - arg);
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        if (strlen(keys[k].key) == keylen && !strncmp(keys[k].key, arg, keylen)) {
            char *end;
            errno = 0;
            long value = strtol(eq + 1, &end, 10);
            if (errno || end == eq + 1 || *end || value < keys[k].min || value > 1000000000L)
                usage("bad parameter value");
            *keys[k].slot = value;
            return;
        }
    }
    usage("unknown parameter");
}

/* "ran-on notifier=CPU[ waiter=CPU]"; with_waiter is 0 for single-threaded experiments. */
static void print_ran_on(int with_waiter)
{
    fputs("ran-on notifier=", stdout);
    if (notifier_cpu_seen >= 0)
        printf("%d", notifier_cpu_seen);
    else
        fputs("-", stdout);
    if (with_waiter) {
        fputs(" waiter=", stdout);
        if (waiter_cpu_seen >= 0)
            printf("%d", waiter_cpu_seen);
        else
            fputs("-", stdout);
    }
    fputs("\n", stdout);
}

static void finish_output(void)
{
    if (fflush(stdout) || ferror(stdout))
        fail("writing stdout", errno);
}

static void print_latency(const char *name, const int64_t *samples, long total, int with_waiter)
{
    printf("wakelab-floor %d latency %s %ld\n", FLOOR_FORMAT, name, total);
    for (long i = 0; i < total; i++) {
        if (samples[i] == LOST)
            fputs("lost\n", stdout);
        else
            printf("%lld\n", (long long)samples[i]);
    }
    print_ran_on(with_waiter);
    printf("end %ld\n", total);
    finish_output();
}

static int64_t *alloc_samples(long total)
{
    int64_t *p = calloc(total > 0 ? (size_t)total : 1, sizeof *p);
    if (!p)
        fail("out of memory", 0);
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage("no experiment named");
    const char *name = argv[1];
    for (int i = 2; i < argc; i++)
        parse_param(argv[i]);

    if (!strcmp(name, "selftest")) {
        printf("wakelab-floor %d ok\n", FLOOR_FORMAT);
        finish_output();
        return 0;
    }
    if (!strcmp(name, "native-sigaction-install")) {
        long total = P.warmup_rounds + P.rounds;
        int64_t *rounds = alloc_samples(total);
        int64_t *baseline = alloc_samples(total);
        run_sigaction_install(rounds, baseline, total);
        printf("wakelab-floor %d rate %s %ld\n", FLOOR_FORMAT, name, total);
        for (long r = 0; r < total; r++)
            printf("%lld %lld\n", (long long)rounds[r], (long long)baseline[r]);
        print_ran_on(0);
        printf("end %ld\n", total);
        finish_output();
        return 0;
    }

    const thread_experiment_t *exp = NULL;
    if (!strcmp(name, "native-condvar"))
        exp = &CONDVAR;
    else if (!strcmp(name, "native-pipe"))
        exp = &PIPE;
    else if (!strcmp(name, "native-eventfd"))
        exp = &EVENTFD;
    else if (!strcmp(name, "native-sigwait"))
        exp = &SIGWAIT;
    else if (strcmp(name, "native-self-signal"))
        usage("unknown experiment");

    long total = P.warmup + P.n;
    int64_t *samples = alloc_samples(total);
    if (exp)
        run_thread_experiment(exp, samples, total);
    else
        run_self_signal(samples, total);
    print_latency(name, samples, total, exp != NULL);
    return 0;
}
