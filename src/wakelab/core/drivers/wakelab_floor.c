/*
 * wakelab_floor.c -- the native floor of wakelab.
 *
 * The same wake experiments as wakelab's Python arms, done in C, so that a
 * report can put the interpreter's cost beside what the kernel and libc cost
 * on the same machine, under the same conditions.  Each experiment mirrors
 * one Python arm: the same scope (self, cross-thread, cross-process), the
 * same waiter state and the same t1 point (after the wait, after the read,
 * or in the signal handler).  wakelab.core.families.native says which C
 * experiment matches which Python arm.
 *
 * Placement: notifier_cpu=C pins the notifier (for the single-threaded
 * self-signal and sigaction experiments, the only thread) to CPU C,
 * waiter_cpu=C pins the waiter (a thread, or the child process of the
 * cross-process experiments), with pthread_setaffinity_np; -1 (the default)
 * leaves the inherited mask alone.  Each side notes the CPU it last ran on
 * (sched_getcpu) at the end of its loop, and the output says so (the
 * "ran-on" line).
 *
 * Clock: clock_gettime(CLOCK_MONOTONIC), the clock behind Python's
 * time.perf_counter_ns() on Linux, one clock for every thread and process,
 * so the figures are directly comparable (also across processes).
 *
 * Definitions follow wakelab's DESIGN notes:
 *   t0  the notifier's clock reading immediately before the notify call;
 *   t1  the waiter's clock reading as the first statement after its wait
 *       returns (after the read, for a wait that reads, such as recv), or
 *       the first statement of the signal handler;
 *   blocked waiters announce that they are about to wait, then the notifier
 *   lets the wake's settle pass before t0 -- settle_us, or with settles=1
 *   the wake's own value read from stdin (wakelab's random settles, the
 *   same schedule its Python drivers sleep); every wait is bounded by timeout_ms and a
 *   wake that does not arrive is printed as "lost"; a wake whose t1 is
 *   before its t0 answered an older notify and is printed as "stale".
 *   Handshake waits (outside the timed window) are bounded too; if one
 *   expires the program reports it on stderr and exits with status 3, so it
 *   always ends, and a waiter child process never outlives it.
 *
 * The timed window (see wakelab.core.drivers): the notifier's step is chosen
 * once per run, before the first wake, and is exactly
 *       t0 = clock(); notify();
 * then the notifier blocks on its completion handshake.  The self-test step
 * (planted_delay_us or planted_after_us set) is
 *       t0 = clock(); [wait planted_delay_us]; notify(); [wait planted_after_us];
 * a wait before the notify must show in every sample, one after it must not.
 * Both waits sleep and spin only their last SPIN_TAIL_NS, as Python's
 * planted_wait does.  t0 is taken after the settle sleep, never before it.
 *
 * Usage:  wakelab_floor EXPERIMENT [key=value ...]
 *   keys: n warmup settle_us timeout_ms planted_delay_us planted_after_us
 *         install_n rounds warmup_rounds notifier_cpu waiter_cpu (-1: not
 *         pinned) lose_every (fault injection for tests: the notifier skips
 *         every lose_every-th notify, so that wake is lost) stamps (1: add
 *         the traced-run trailer described below) cpus (1: add the per-wake
 *         CPU trailer described below) settles (1: read warmup + n whole
 *         numbers of microseconds from stdin, whitespace-separated, the
 *         settle of each wake in turn, instead of settle_us for every one)
 *         waiter_policy waiter_priority notifier_policy notifier_priority
 *         (each side's scheduling policy, by the kernel's number: 0
 *         SCHED_OTHER, 1 SCHED_FIFO, 2 SCHED_RR; -1, the default, leaves the
 *         thread as created; applied with SCHED_RESET_ON_FORK as the side
 *         takes its role, before it pins itself)
 *   EXPERIMENT "selftest" only prints "wakelab-floor FORMAT ok".
 *   EXPERIMENT "storm-handler" or "storm-sigwait" is the receiving end of a
 *   signal storm (keys signo cap free_ms quiet_ms), with a line protocol of
 *   its own on stdin and stdout: see "Storm receivers" below.
 *
 * Output (stdout), format version FLOOR_FORMAT:
 *   wakelab-floor FORMAT latency EXPERIMENT COUNT    then COUNT lines, each
 *       a latency in ns, "lost" or "stale", in the order taken (warm-up
 *       wakes included; the Python side drops them), then the ran-on line,
 *       then "end COUNT".
 *   wakelab-floor FORMAT rate EXPERIMENT COUNT       then COUNT lines
 *       "ROUND_NS BASELINE_NS" (warm-up rounds included), then the ran-on
 *       line, then "end COUNT".
 *   The ran-on line is "ran-on notifier=CPU waiter=CPU" for the experiments
 *   with two sides and "ran-on notifier=CPU" for the single-threaded ones;
 *   CPU is "-" when sched_getcpu() failed.
 *   With stamps=1 (a traced run) a latency experiment with a waiter adds,
 *   after "end COUNT", the trailer "stamps notifier_tid=TID waiter_tid=TID
 *   COUNT", then COUNT lines each the wake's t0 (CLOCK_MONOTONIC ns, 0 for a
 *   wake without one), then "end stamps": the kernel thread ids whose
 *   scheduler events the Python side matches to each wake.  t0 is stored
 *   after the wake is over, outside the timed window.  Without stamps=1 the
 *   output is exactly as above.
 *   With cpus=1 a thread or process experiment adds, after "end COUNT" and before any
 *   stamps trailer, "cpus COUNT", then COUNT lines "NOTIFIER_CPU WAITER_CPU"
 *   (-1: unknown), then "end cpus": the CPU the notifier ran on right before
 *   t0 and the one the waiter ran on right after t1, both read outside the
 *   timed window (a process experiment's child sends its CPU with "woke").
 *   The self-signal experiment ignores cpus=1.
 * Format history: 1 -- records and end line; 2 -- adds the ran-on line;
 *   3 -- adds "stale" records (a wake that answered an older notify, never a
 *   negative figure), the planted_after_us key and the experiments
 *   native-socketpair, native-selector-pipe, native-pause-handler,
 *   native-wakeup-fd-select, native-pipe-process, native-eventfd-fork and
 *   native-kill-sigwait-child.
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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_FORMAT 3
#define LOST INT64_MIN
#define STALE (INT64_MIN + 1)
/* Handshakes outside the timed window get the wake timeout plus this. */
#define HANDSHAKE_SLACK_MS 5000
/* A planted wait sleeps, then spins only its last 200 us (as Python's planted_wait). */
#define SPIN_TAIL_NS 200000
/* How long a waiter child gets to exit when asked, before SIGKILL. */
#define CHILD_EXIT_GRACE_MS 2000

typedef struct {
    long n;
    long warmup;
    long settle_us;
    long timeout_ms;
    long planted_delay_us;
    long planted_after_us;
    long install_n;
    long rounds;
    long warmup_rounds;
    long lose_every;
    long notifier_cpu; /* -1: not pinned */
    long waiter_cpu;   /* -1: not pinned */
    long parent_pid;   /* 0: not watched; else die with that parent (PR_SET_PDEATHSIG) */
    long stamps;       /* 1: print each wake's t0 and both sides' thread ids (traced runs) */
    long cpus;         /* 1: print each wake's CPUs (thread experiments) */
    long settles;      /* 1: each wake's settle (us) is read from stdin (SETTLES) */
    long waiter_policy;     /* -1: leave as created; else SCHED_OTHER (0), SCHED_FIFO (1), SCHED_RR (2) */
    long waiter_priority;
    long notifier_policy;   /* the same for the notifier */
    long notifier_priority;
    long signo;             /* storm receivers: the signal of the storm */
    long cap;               /* storm receivers: deliveries whose t1 is kept (the rest only counted) */
    long free_ms;           /* storm receivers: length of the storm-free pass of the work loop */
    long quiet_ms;          /* storm receivers: the drain ends after this long without a delivery */
} params_t;

static params_t P = {200, 10, 1000, 1000, 0, 0, 20000, 7, 1, 0, -1, -1, 0, 0, 0, 0, -1, 0, -1, 0, 10, 100000, 100, 50};
/* With settles=1: each wake's settle in us, read before the first wake (NULL: settle_us each). */
static long *SETTLES = NULL;

/* The CPU each side last ran on, read at the end of its loop (-1: unknown). */
static int notifier_cpu_seen = -1;
static int waiter_cpu_seen = -1;
/* Kernel thread ids of both sides and each wake's t0, for stamps=1 (0: unknown). */
static long notifier_tid = 0;
static long waiter_tid = 0;
static int64_t *T0S = NULL;
/* For cpus=1: each wake's CPUs, the notifier's read before t0 and the waiter's after t1 (-1: unknown). */
static int *NCPUS = NULL;
static int *WCPUS = NULL;

/* Cross-process experiments: the waiter child (parent side), and whether we are it. */
static pid_t waiter_child = 0;
static int in_child = 0;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int reap_child(long grace_ms);

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Report on stderr and exit with status 3; a waiter child is killed and reaped first. */
static void failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(in_child ? "wakelab_floor (waiter child): " : "wakelab_floor: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n", stderr);
    va_end(ap);
    if (in_child)
        _exit(3); /* no stdio flush: the parent's buffers are not ours */
    if (waiter_child > 0) {
        kill(waiter_child, SIGKILL);
        reap_child(0);
    }
    exit(3);
}

static void fail(const char *what, int err)
{
    if (err)
        failf("%s: %s", what, strerror(err));
    failf("%s", what);
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

static void sleep_until_ns(int64_t deadline)
{
    struct timespec until;
    until.tv_sec = deadline / 1000000000;
    until.tv_nsec = deadline % 1000000000;
    int rc;
    while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL)) == EINTR)
        ;
    if (rc)
        fail("clock_nanosleep", rc);
}

static void sleep_us(long us)
{
    if (us > 0)
        sleep_until_ns(now_ns() + (int64_t)us * 1000);
}

/* This wake's settle in us: its value from stdin with settles=1, else settle_us. */
static long settle_of(long i)
{
    return SETTLES ? SETTLES[i] : P.settle_us;
}

/* settles=1: read total settles (whole us, 0..1e9) from stdin before the first wake. */
static void read_settles(long total)
{
    SETTLES = calloc(total > 0 ? (size_t)total : 1, sizeof *SETTLES);
    if (!SETTLES)
        fail("out of memory", 0);
    for (long i = 0; i < total; i++) {
        long value;
        if (scanf("%ld", &value) != 1 || value < 0 || value > 1000000000L)
            failf("settles=1: expected %ld settles (whole microseconds) on stdin, got %ld", total, i);
        SETTLES[i] = value;
    }
}

/* Give the calling thread its role's scheduling policy (waiter_policy= or notifier_policy=;
 * -1 leaves it as created).  SCHED_RESET_ON_FORK: threads and children it starts are normal tasks. */
static void sched_self(const char *role)
{
    int waiter = !strcmp(role, "waiter");
    long policy = waiter ? P.waiter_policy : P.notifier_policy;
    long priority = waiter ? P.waiter_priority : P.notifier_priority;
    if (policy < 0)
        return;
    struct sched_param sp;
    memset(&sp, 0, sizeof sp);
    sp.sched_priority = (int)priority;
    if (sched_setscheduler(0, (int)policy | SCHED_RESET_ON_FORK, &sp))
        failf("giving the %s scheduling policy %ld priority %ld: %s", role, policy, priority, strerror(errno));
}

/* Take a role: its scheduling policy (if one was asked for), then pin to cpu (no-op for -1). */
static void pin_self(long cpu, const char *role)
{
    sched_self(role);
    if (cpu < 0)
        return;
    if (cpu >= CPU_SETSIZE)
        failf("pinning the %s to CPU %ld: beyond CPU_SETSIZE", role, cpu);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc)
        failf("pinning the %s to CPU %ld: %s", role, cpu, strerror(rc));
}

/* ------------------------------------------------------------------ */
/* The timed notify step (see the header): chosen once per run.         */

/* The running experiment's notify call; set before the first wake. */
static void (*notify_fn)(void);

typedef int64_t (*step_fn)(void);

/* Wait until deadline_ns: sleep, then spin the last SPIN_TAIL_NS (precise end). */
static void planted_wait(int64_t deadline_ns)
{
    int64_t sleep_end = deadline_ns - SPIN_TAIL_NS;
    if (sleep_end > now_ns())
        sleep_until_ns(sleep_end);
    while (now_ns() < deadline_ns)
        ;
}

/* The measuring step: exactly t0, then the notify call. */
static int64_t step_plain(void)
{
    int64_t t0 = now_ns();
    notify_fn();
    return t0;
}

/* The self-test step: the planted waits are the only additions. */
static int64_t step_planted(void)
{
    int64_t t0 = now_ns();
    if (P.planted_delay_us > 0)
        planted_wait(t0 + (int64_t)P.planted_delay_us * 1000);
    notify_fn();
    if (P.planted_after_us > 0)
        planted_wait(now_ns() + (int64_t)P.planted_after_us * 1000);
    return t0;
}

/* Fault injection (lose_every): no notify at all, so the wake is lost. */
static int64_t step_skipped(void)
{
    return now_ns();
}

static step_fn chosen_step(void)
{
    return (P.planted_delay_us > 0 || P.planted_after_us > 0) ? step_planted : step_plain;
}

/* This wake's step (i counts from 0); chosen before the settle, never inside the window. */
static step_fn step_for(long i, step_fn chosen)
{
    return (P.lose_every > 0 && (i + 1) % P.lose_every == 0) ? step_skipped : chosen;
}

/* One record: t1 - t0, LOST (t1 == 0: no wake) or STALE (the wake answered an older notify). */
static int64_t wake_record(int64_t t0, int64_t t1)
{
    if (!t1)
        return LOST;
    return t1 < t0 ? STALE : t1 - t0;
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

/* One read of up to 64 bytes from a non-blocking fd: 1 if it got anything, 0 if empty. */
static int read_some(int fd, const char *what)
{
    char buf[64];
    for (;;) {
        ssize_t got = read(fd, buf, sizeof buf);
        if (got > 0)
            return 1;
        if (got == 0)
            failf("%s: end of file (the other side closed it)", what);
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        fail(what, errno);
    }
}

static void drain_fd(int fd)
{
    while (read_some(fd, "read (drain)"))
        ;
}

static void write_all(int fd, const void *data, size_t size, const char *what)
{
    ssize_t put;
    while ((put = write(fd, data, size)) < 0 && errno == EINTR)
        ;
    if (put != (ssize_t)size)
        fail(what, put < 0 ? errno : 0);
}

static void set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        fail("fcntl (O_NONBLOCK)", errno);
}

static void install_handler(int signum, void (*handler)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_ONSTACK; /* what CPython's signal.signal() passes: no SA_RESTART */
    if (sigaction(signum, &sa, NULL))
        fail("sigaction", errno);
}

static void mask_usr1(int how)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    int rc = pthread_sigmask(how, &set, NULL);
    if (rc)
        fail("pthread_sigmask", rc);
}

static void noop_handler(int signum)
{
    (void)signum;
}

/* ------------------------------------------------------------------ */
/* Cross-thread experiments: one persistent blocked waiter thread.      */
/*                                                                      */
/* The notifier loop and the waiter loop are the same for every         */
/* experiment; which thread runs which is the experiment's choice       */
/* (waiter_is_main: the waiter is the process's main thread, as in the  */
/* Python arms whose waiter must be the main thread).                   */

typedef struct {
    void (*setup)(void);       /* main thread, before the second thread exists */
    void (*reset)(void);       /* notifier side, before the waiter is let go */
    void (*waiter_init)(void); /* waiter side, once, before its first wake */
    void (*prepare)(void);     /* waiter side, before it announces itself */
    int64_t (*wait)(long timeout_ms); /* waiter: returns t1, or 0 on timeout */
    void (*notify)(void);      /* the notify call (t0 is taken right before it) */
    /* For waits without a timeout of their own (pause): called by the notifier
     * when the waiter has not returned timeout_ms after the notify, and then
     * every RESCUE_EVERY_MS until it has; such a wake counts as lost. */
    void (*rescue)(void);
    void (*teardown)(void);
    int waiter_is_main;
} thread_experiment_t;

#define RESCUE_EVERY_MS 50

static const thread_experiment_t *EXP;
static int64_t *SAMPLES;
static long TOTAL;
static pthread_t waiter_id;  /* set by the waiter before it first announces itself */

/* Handshake state, all under ctl_lock. */
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ctl_cond;
static int ctl_go, ctl_ready, ctl_done, ctl_stop, ctl_failed;
static int64_t ctl_t1;
static int ctl_cpu = -1; /* the CPU the waiter woke on, read after t1 */

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

static void *waiter_loop(void *unused)
{
    (void)unused;
    pin_self(P.waiter_cpu, "waiter");
    waiter_id = pthread_self();
    waiter_tid = (long)syscall(SYS_gettid);
    if (EXP->waiter_init)
        EXP->waiter_init();
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
            waiter_cpu_seen = sched_getcpu(); /* read after the join */
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
        int woke_on = WCPUS ? sched_getcpu() : -1; /* after t1: outside the timed window */

        pthread_mutex_lock(&ctl_lock);
        ctl_t1 = t1;
        ctl_cpu = woke_on;
        ctl_done = 1;
        pthread_cond_broadcast(&ctl_cond);
    }
    pthread_mutex_unlock(&ctl_lock);
    return NULL;
}

/* With ctl_lock held, after the notify of a wait without a timeout: rescue a
 * waiter that has not returned within timeout_ms.  Returns 1 if it had to. */
static int ctl_watchdog(const thread_experiment_t *exp, long handshake_ms)
{
    struct timespec deadline = monotonic_after_ms(P.timeout_ms);
    if (ctl_wait_for(&ctl_done, &deadline))
        return 0;
    int64_t give_up = now_ns() + (int64_t)handshake_ms * 1000000;
    while (!ctl_done && !ctl_failed && now_ns() < give_up) {
        pthread_mutex_unlock(&ctl_lock);
        exp->rescue();
        pthread_mutex_lock(&ctl_lock);
        long every = P.timeout_ms < RESCUE_EVERY_MS ? P.timeout_ms : RESCUE_EVERY_MS;
        deadline = monotonic_after_ms(every);
        ctl_wait_for(&ctl_done, &deadline);
    }
    return 1;
}

static void *notifier_loop(void *unused)
{
    (void)unused;
    const thread_experiment_t *exp = EXP;
    pin_self(P.notifier_cpu, "notifier");
    notifier_tid = (long)syscall(SYS_gettid);
    step_fn step = chosen_step();
    long handshake_ms = P.timeout_ms + HANDSHAKE_SLACK_MS;
    for (long i = 0; i < TOTAL; i++) {
        step_fn fire = step_for(i, step);
        if (exp->reset)
            exp->reset();
        pthread_mutex_lock(&ctl_lock);
        ctl_ready = 0;
        ctl_done = 0;
        ctl_t1 = 0;
        ctl_cpu = -1;
        ctl_go = 1;
        pthread_cond_broadcast(&ctl_cond);
        struct timespec deadline = monotonic_after_ms(handshake_ms);
        if (!ctl_wait_for(&ctl_ready, &deadline))
            fail("waiter thread did not announce itself", 0);
        pthread_mutex_unlock(&ctl_lock);

        sleep_us(settle_of(i));
        int notified_on = NCPUS ? sched_getcpu() : -1; /* before t0: outside the timed window */
        int64_t t0 = fire();

        pthread_mutex_lock(&ctl_lock);
        int rescued = exp->rescue ? ctl_watchdog(exp, handshake_ms) : 0;
        deadline = monotonic_after_ms(handshake_ms);
        if (!ctl_wait_for(&ctl_done, &deadline))
            fail("waiter thread did not return from its wait", 0);
        int64_t t1 = ctl_t1;
        int woke_on = ctl_cpu;
        pthread_mutex_unlock(&ctl_lock);
        SAMPLES[i] = rescued ? LOST : wake_record(t0, t1);
        if (NCPUS) {
            NCPUS[i] = notified_on;
            WCPUS[i] = woke_on;
        }
        if (T0S)
            T0S[i] = t0; /* the wake is over: outside the timed window */
    }
    notifier_cpu_seen = sched_getcpu();

    pthread_mutex_lock(&ctl_lock);
    ctl_stop = 1;
    pthread_cond_broadcast(&ctl_cond);
    pthread_mutex_unlock(&ctl_lock);
    return NULL;
}

static void run_thread_experiment(const thread_experiment_t *exp, int64_t *samples, long total)
{
    EXP = exp;
    SAMPLES = samples;
    TOTAL = total;
    notify_fn = exp->notify;
    /* Before pthread_create: the second thread starts from this mask, then re-pins itself. */
    pin_self(exp->waiter_is_main ? P.waiter_cpu : P.notifier_cpu,
             exp->waiter_is_main ? "waiter" : "notifier");
    init_monotonic_cond(&ctl_cond);
    if (exp->setup)
        exp->setup();
    pthread_t other;
    int rc = pthread_create(&other, NULL, exp->waiter_is_main ? notifier_loop : waiter_loop, NULL);
    if (rc)
        fail("pthread_create", rc);
    if (exp->waiter_is_main)
        waiter_loop(NULL);
    else
        notifier_loop(NULL);
    rc = pthread_join(other, NULL);
    if (rc)
        fail("pthread_join", rc);
    if (ctl_failed)
        fail("waiter thread was never let go", 0);
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
    .setup = condvar_setup,
    .reset = condvar_reset,
    .wait = condvar_wait,
    .notify = condvar_notify,
};

/* native-pipe: one byte through a pipe; the waiter sits in poll(), t1, then read(). */

static int pipe_fds[2] = {-1, -1};

static void pipe_setup(void)
{
    if (pipe2(pipe_fds, O_CLOEXEC))
        fail("pipe2", errno);
    set_nonblocking(pipe_fds[0]); /* the read end, as the Python arms have it */
}

static void pipe_reset(void)
{
    drain_fd(pipe_fds[0]);
}

/* poll(), t1, then one read; a readable fd that yields nothing is not the wake. */
static int64_t poll_then_read(int fd, long timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int64_t left_ms = ms_left(deadline);
        if (left_ms <= 0)
            return 0;
        int64_t t1 = poll_readable(fd, left_ms);
        if (!t1)
            return 0;
        if (read_some(fd, "read (wake)"))
            return t1;
    }
}

static int64_t pipe_wait(long timeout_ms)
{
    return poll_then_read(pipe_fds[0], timeout_ms);
}

static void pipe_notify(void)
{
    write_all(pipe_fds[1], "x", 1, "write (pipe)");
}

static void pipe_teardown(void)
{
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

static const thread_experiment_t PIPE = {
    .setup = pipe_setup,
    .reset = pipe_reset,
    .wait = pipe_wait,
    .notify = pipe_notify,
    .teardown = pipe_teardown,
};

/* native-eventfd: eventfd counter write; the waiter sits in poll(), t1, then read(). */

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
    return poll_then_read(event_fd, timeout_ms);
}

static void eventfd_notify(void)
{
    uint64_t one = 1;
    write_all(event_fd, &one, sizeof one, "write (eventfd)");
}

static void eventfd_teardown(void)
{
    close(event_fd);
}

static const thread_experiment_t EVENTFD = {
    .setup = eventfd_setup,
    .reset = eventfd_reset,
    .wait = eventfd_wait,
    .notify = eventfd_notify,
    .teardown = eventfd_teardown,
};

/* native-socketpair: send() of one byte on an AF_UNIX stream socketpair; the
 * waiter does what CPython's recv() on a socket with a timeout does: poll()
 * the non-blocking fd, then recv(); t1 is taken after recv() returns the
 * byte (a poll whose recv finds nothing goes back to poll). */

static int sock_fds[2] = {-1, -1};

static void socketpair_setup(void)
{
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock_fds))
        fail("socketpair", errno);
    set_nonblocking(sock_fds[1]); /* settimeout() makes the fd non-blocking */
}

static void socketpair_reset(void)
{
    drain_fd(sock_fds[1]);
}

static int64_t socketpair_wait(long timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int left_ms = ms_left(deadline);
        if (left_ms <= 0 || !poll_readable(sock_fds[1], left_ms))
            return 0;
        char byte;
        ssize_t got;
        while ((got = recv(sock_fds[1], &byte, 1, 0)) < 0 && errno == EINTR)
            ;
        int64_t t1 = now_ns();
        if (got == 1)
            return t1;
        if (got == 0)
            fail("recv (socketpair): the sender closed its end", 0);
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            fail("recv (socketpair)", errno);
    }
}

static void socketpair_notify(void)
{
    ssize_t put;
    while ((put = send(sock_fds[0], "x", 1, 0)) < 0 && errno == EINTR)
        ;
    if (put != 1)
        fail("send (socketpair)", put < 0 ? errno : 0);
}

static void socketpair_teardown(void)
{
    close(sock_fds[0]);
    close(sock_fds[1]);
}

static const thread_experiment_t SOCKETPAIR = {
    .setup = socketpair_setup,
    .reset = socketpair_reset,
    .wait = socketpair_wait,
    .notify = socketpair_notify,
    .teardown = socketpair_teardown,
};

/* native-selector-pipe: a pipe write wakes a thread in epoll_wait() on the
 * read end (what selectors.DefaultSelector is on Linux); t1 right after
 * epoll_wait() returns, then the read. */

static int epoll_fd = -1;

static void selector_setup(void)
{
    pipe_setup();
    epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd < 0)
        fail("epoll_create1", errno);
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = EPOLLIN;
    ev.data.fd = pipe_fds[0];
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, pipe_fds[0], &ev))
        fail("epoll_ctl", errno);
}

static int64_t selector_wait(long timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int left_ms = ms_left(deadline);
        if (left_ms <= 0)
            return 0;
        struct epoll_event ev;
        int rc = epoll_wait(epoll_fd, &ev, 1, left_ms);
        int64_t t1 = now_ns();
        if (rc > 0 && read_some(pipe_fds[0], "read (selector)"))
            return t1;
        if (rc < 0 && errno != EINTR)
            fail("epoll_wait", errno);
    }
}

static void selector_teardown(void)
{
    close(epoll_fd);
    pipe_teardown();
}

static const thread_experiment_t SELECTOR_PIPE = {
    .setup = selector_setup,
    .reset = pipe_reset,
    .wait = selector_wait,
    .notify = pipe_notify,
    .teardown = selector_teardown,
};

/* native-sigwait: pthread_kill(waiter, SIGUSR1); the waiter sits in
 * sigtimedwait() with SIGUSR1 blocked (blocked in every thread, so the
 * signal can only be taken by sigtimedwait). */

static sigset_t usr1_set;

static void sigwait_setup(void)
{
    install_handler(SIGUSR1, noop_handler);
    sigemptyset(&usr1_set);
    sigaddset(&usr1_set, SIGUSR1);
    /* Before pthread_create, so the waiter inherits the mask. */
    mask_usr1(SIG_BLOCK);
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
    int rc = pthread_kill(waiter_id, SIGUSR1);
    if (rc)
        fail("pthread_kill", rc);
}

static const thread_experiment_t SIGWAIT = {
    .setup = sigwait_setup,
    .prepare = sigwait_prepare,
    .wait = sigwait_wait,
    .notify = sigwait_notify,
};

/* native-pause-handler: the main thread, SIGUSR1 unblocked and a C handler
 * installed, sits in pause(); a notifier thread (SIGUSR1 blocked) sends
 * pthread_kill(main, SIGUSR1); t1 is the handler's first statement.  pause()
 * has no timeout, so the notifier is also the watchdog, as in the Python
 * arm: if pause() has not returned timeout_ms after the notify (the signal
 * came before the waiter was inside pause), it re-sends SIGUSR1,
 * process-directed, until pause() returns, and the wake counts as lost. */

static volatile int64_t handler_t1;

static void stamp_handler(int signum)
{
    int64_t t1 = now_ns(); /* clock_gettime is async-signal-safe */
    (void)signum;
    handler_t1 = t1;
}

static void pause_setup(void)
{
    install_handler(SIGUSR1, stamp_handler);
    /* Blocked in the main thread before the notifier exists: the notifier
     * inherits the block, so a process-directed rescue reaches the waiter. */
    mask_usr1(SIG_BLOCK);
}

static void pause_waiter_init(void)
{
    mask_usr1(SIG_UNBLOCK);
}

static void pause_prepare(void)
{
    handler_t1 = 0;
}

static int64_t pause_wait(long timeout_ms)
{
    (void)timeout_ms; /* pause() has none: the notifier's watchdog bounds it */
    pause();
    return handler_t1; /* 0 if pause() returned without our handler */
}

static void pause_rescue(void)
{
    if (kill(getpid(), SIGUSR1))
        fail("kill (rescue)", errno);
}

static void pause_teardown(void)
{
    /* A late rescue may still be pending: let the handler take it, then restore. */
    struct timespec zero = {0, 0};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    mask_usr1(SIG_BLOCK);
    while (sigtimedwait(&set, NULL, &zero) == SIGUSR1)
        ;
    signal(SIGUSR1, SIG_DFL);
}

static const thread_experiment_t PAUSE_HANDLER = {
    .setup = pause_setup,
    .waiter_init = pause_waiter_init,
    .prepare = pause_prepare,
    .wait = pause_wait,
    .notify = sigwait_notify, /* pthread_kill(waiter = the main thread, SIGUSR1) */
    .rescue = pause_rescue,
    .teardown = pause_teardown,
    .waiter_is_main = 1,
};

/* native-wakeup-fd-select: CPython's wakeup-fd path in C.  The main thread
 * (SIGUSR1 unblocked) sits in select() on the read end of a non-blocking
 * pipe; a notifier thread that blocks SIGUSR1 sends kill(getpid(), SIGUSR1)
 * (process-directed, like an outside sender); the C handler writes the
 * signal number to the pipe, as CPython's handler writes to the wakeup fd;
 * select() fails with EINTR and is retried (as CPython retries it), then
 * sees the byte; t1 right after the select() that returns readable, before
 * the read. */

static int wakeup_fds[2] = {-1, -1};

static void wakeup_handler(int signum)
{
    unsigned char byte = (unsigned char)signum;
    int saved = errno;
    ssize_t put = write(wakeup_fds[1], &byte, 1);
    (void)put; /* a full pipe drops the byte, as CPython's handler does */
    errno = saved;
}

static void wakeup_setup(void)
{
    if (pipe2(wakeup_fds, O_CLOEXEC | O_NONBLOCK))
        fail("pipe2", errno);
    install_handler(SIGUSR1, wakeup_handler);
    mask_usr1(SIG_BLOCK); /* the notifier inherits the block; the waiter lifts it */
}

static void wakeup_reset(void)
{
    drain_fd(wakeup_fds[0]);
}

static int64_t wakeup_wait(long timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int64_t left = deadline - now_ns();
        if (left < 0)
            left = 0;
        struct timeval tv;
        tv.tv_sec = (time_t)(left / 1000000000);
        tv.tv_usec = (suseconds_t)((left % 1000000000) / 1000);
        fd_set readable;
        FD_ZERO(&readable);
        FD_SET(wakeup_fds[0], &readable);
        int rc = select(wakeup_fds[0] + 1, &readable, NULL, NULL, &tv);
        int64_t t1 = now_ns();
        if (rc > 0) {
            unsigned char buf[64];
            ssize_t got;
            while ((got = read(wakeup_fds[0], buf, sizeof buf)) < 0 && errno == EINTR)
                ;
            for (ssize_t k = 0; k < got; k++)
                if (buf[k] == SIGUSR1)
                    return t1;
            return 0; /* another signal's byte: not our wake */
        }
        if (rc == 0)
            return 0;
        if (errno != EINTR)
            fail("select", errno);
    }
}

static void wakeup_notify(void)
{
    if (kill(getpid(), SIGUSR1))
        fail("kill", errno);
}

static void wakeup_teardown(void)
{
    pause_teardown();
    close(wakeup_fds[0]);
    close(wakeup_fds[1]);
}

static const thread_experiment_t WAKEUP_FD_SELECT = {
    .setup = wakeup_setup,
    .reset = wakeup_reset,
    .waiter_init = pause_waiter_init,
    .wait = wakeup_wait,
    .notify = wakeup_notify,
    .teardown = wakeup_teardown,
    .waiter_is_main = 1,
};

/* ------------------------------------------------------------------ */
/* Cross-process experiments: the parent notifies, a forked child waits. */
/*                                                                      */
/* The child is forked once per run, from the single-threaded parent,  */
/* and pins itself to waiter_cpu.  Parent and child talk over a          */
/* SOCK_SEQPACKET socketpair, only outside the timed window:             */
/*   parent: GO i              child: drain leftovers, READY i, wait     */
/*   parent: settle, t0, notify, then blocks in poll() for the reply     */
/*                             child: WOKE t1 (or LOST)                  */
/*   parent: QUIT              child: BYE cpu, exit 0                    */
/* The child dies with the parent (PR_SET_PDEATHSIG) and is reaped by it. */

typedef struct {
    void (*setup)(void);       /* parent, before the fork */
    void (*parent_init)(void); /* parent, after the fork: close what is the child's */
    void (*child_init)(void);  /* child, after the fork */
    void (*drain)(void);       /* child, before READY */
    int64_t (*wait)(long timeout_ms); /* child: t1, or 0 on timeout */
    void (*notify)(void);      /* parent */
    void (*teardown)(void);    /* parent */
} process_experiment_t;

enum { MSG_GO = 1, MSG_QUIT, MSG_READY, MSG_WOKE, MSG_LOST, MSG_BYE };

typedef struct {
    int64_t tag;
    int64_t value;
    int64_t cpu; /* MSG_WOKE: the CPU the child woke on, read after t1 (-1: unknown) */
} msg_t;

static void send_msg_cpu(int fd, int64_t tag, int64_t value, int64_t cpu)
{
    msg_t m = {tag, value, cpu};
    ssize_t put;
    while ((put = send(fd, &m, sizeof m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (put != (ssize_t)sizeof m)
        fail("send (control)", put < 0 ? errno : 0);
}

static void send_msg(int fd, int64_t tag, int64_t value)
{
    send_msg_cpu(fd, tag, value, -1);
}

/* 1: a message; 0: the other side closed its end; -1: nothing within timeout_ms. */
static int recv_msg(int fd, long timeout_ms, msg_t *m)
{
    if (!poll_readable(fd, timeout_ms))
        return -1;
    ssize_t got;
    while ((got = recv(fd, m, sizeof *m, 0)) < 0 && errno == EINTR)
        ;
    if (got == 0)
        return 0;
    if (got != (ssize_t)sizeof *m)
        fail("recv (control)", got < 0 ? errno : 0);
    return 1;
}

/* Wait up to grace_ms for the waiter child to exit, then SIGKILL it; its wait status. */
static int reap_child(long grace_ms)
{
    int status = 0;
    pid_t pid = waiter_child;
    if (pid <= 0)
        return 0;
    int64_t give_up = now_ns() + (int64_t)grace_ms * 1000000;
    for (;;) {
        pid_t rc = waitpid(pid, &status, WNOHANG);
        if (rc == pid || (rc < 0 && errno != EINTR))
            break;
        if (now_ns() >= give_up) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        sleep_us(1000);
    }
    waiter_child = 0;
    return status;
}

static void describe_status(int status, char *out, size_t size)
{
    if (WIFSIGNALED(status))
        snprintf(out, size, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
}

/* Parent: the child's next message, which must carry tag a or tag b. */
static msg_t expect_msg(int ctl, int64_t a, int64_t b, long timeout_ms, long wake)
{
    msg_t m;
    int rc = recv_msg(ctl, timeout_ms, &m);
    if (rc == 1 && (m.tag == a || m.tag == b))
        return m;
    if (rc == 0) {
        char how[64];
        describe_status(reap_child(CHILD_EXIT_GRACE_MS), how, sizeof how);
        failf("waiter child died during wake %ld (it %s)", wake, how);
    }
    if (rc < 0)
        failf("waiter child did not answer within %ld ms during wake %ld", timeout_ms, wake);
    failf("waiter child sent message %lld during wake %ld", (long long)m.tag, wake);
}

static void child_main(const process_experiment_t *exp, int ctl, pid_t parent)
{
    in_child = 1;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL))
        fail("prctl (PR_SET_PDEATHSIG)", errno);
    if (getppid() != parent) /* the parent died before the line above */
        _exit(3);
    pin_self(P.waiter_cpu, "waiter");
    if (exp->child_init)
        exp->child_init();
    long handshake_ms = P.timeout_ms + HANDSHAKE_SLACK_MS;
    for (;;) {
        msg_t m;
        int rc = recv_msg(ctl, handshake_ms, &m);
        if (rc == 0)
            _exit(0); /* the parent went away: nothing left to do */
        if (rc < 0)
            fail("the parent did not send the next wake", 0);
        if (m.tag == MSG_QUIT) {
            send_msg(ctl, MSG_BYE, sched_getcpu());
            _exit(0);
        }
        if (m.tag != MSG_GO)
            fail("unexpected control message", 0);
        if (exp->drain)
            exp->drain();
        send_msg(ctl, MSG_READY, m.value);
        int64_t t1 = exp->wait(P.timeout_ms);
        if (t1)
            send_msg_cpu(ctl, MSG_WOKE, t1, sched_getcpu()); /* the CPU after t1: outside the window */
        else
            send_msg(ctl, MSG_LOST, m.value);
    }
}

static void run_process_experiment(const process_experiment_t *exp, int64_t *samples, long total)
{
    pin_self(P.notifier_cpu, "notifier"); /* the child re-pins itself to waiter_cpu */
    if (exp->setup)
        exp->setup();
    int ctl[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl))
        fail("socketpair (control)", errno);
    fflush(stdout); /* nothing buffered may be inherited */
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        fail("fork", errno);
    if (pid == 0) {
        close(ctl[0]);
        child_main(exp, ctl[1], parent);
        _exit(3); /* not reached */
    }
    waiter_child = pid;
    waiter_tid = (long)pid; /* the child waits in its only thread */
    notifier_tid = (long)syscall(SYS_gettid);
    close(ctl[1]);
    if (exp->parent_init)
        exp->parent_init();
    notify_fn = exp->notify;
    step_fn step = chosen_step();
    long handshake_ms = P.timeout_ms + HANDSHAKE_SLACK_MS;
    for (long i = 0; i < total; i++) {
        step_fn fire = step_for(i, step);
        send_msg(ctl[0], MSG_GO, i);
        msg_t m = expect_msg(ctl[0], MSG_READY, MSG_READY, handshake_ms, i);
        if (m.value != i)
            failf("waiter child armed wake %lld instead of %ld", (long long)m.value, i);

        sleep_us(settle_of(i));
        int notified_on = NCPUS ? sched_getcpu() : -1; /* before t0: outside the timed window */
        int64_t t0 = fire();

        m = expect_msg(ctl[0], MSG_WOKE, MSG_LOST, handshake_ms, i);
        samples[i] = wake_record(t0, m.tag == MSG_WOKE ? m.value : 0);
        if (NCPUS) {
            NCPUS[i] = notified_on;
            WCPUS[i] = m.tag == MSG_WOKE ? (int)m.cpu : -1;
        }
        if (T0S)
            T0S[i] = t0; /* the wake is over: outside the timed window */
    }
    notifier_cpu_seen = sched_getcpu();
    send_msg(ctl[0], MSG_QUIT, 0);
    msg_t bye = expect_msg(ctl[0], MSG_BYE, MSG_BYE, CHILD_EXIT_GRACE_MS, total);
    waiter_cpu_seen = (int)bye.value;
    int status = reap_child(CHILD_EXIT_GRACE_MS);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char how[64];
        describe_status(status, how, sizeof how);
        failf("waiter child did not exit cleanly (it %s)", how);
    }
    close(ctl[0]);
    if (exp->teardown)
        exp->teardown();
}

/* native-pipe-process: the parent write()s one byte to a pipe; the child
 * sits in poll() on the read end, takes t1, then reads the byte. */

static void pipe_process_parent_init(void)
{
    close(pipe_fds[0]); /* the child's now */
    pipe_fds[0] = -1;
}

static void pipe_process_child_init(void)
{
    close(pipe_fds[1]); /* the parent's */
    pipe_fds[1] = -1;
}

static int64_t pipe_process_wait(long timeout_ms)
{
    int64_t t1 = poll_readable(pipe_fds[0], timeout_ms);
    if (t1)
        read_some(pipe_fds[0], "read (pipe)");
    return t1;
}

static void pipe_process_teardown(void)
{
    close(pipe_fds[1]);
}

static const process_experiment_t PIPE_PROCESS = {
    .setup = pipe_setup,
    .parent_init = pipe_process_parent_init,
    .child_init = pipe_process_child_init,
    .drain = pipe_reset,
    .wait = pipe_process_wait,
    .notify = pipe_notify,
    .teardown = pipe_process_teardown,
};

/* native-eventfd-fork: an eventfd shared with the child across fork(); the
 * parent writes 1, the child sits in poll() on it, takes t1, then reads. */

static int64_t eventfd_fork_wait(long timeout_ms)
{
    int64_t t1 = poll_readable(event_fd, timeout_ms);
    if (t1)
        read_some(event_fd, "read (eventfd)");
    return t1;
}

static const process_experiment_t EVENTFD_FORK = {
    .setup = eventfd_setup,
    .drain = eventfd_reset,
    .wait = eventfd_fork_wait,
    .notify = eventfd_notify,
    .teardown = eventfd_teardown,
};

/* native-kill-sigwait-child: the parent kill()s the child with SIGUSR1; the
 * child blocks SIGUSR1 and sits in sigtimedwait(); t1 right after it returns. */

static pid_t sigwait_child_pid;

static void kill_sigwait_parent_init(void)
{
    sigwait_child_pid = waiter_child;
}

static void kill_sigwait_child_init(void)
{
    sigemptyset(&usr1_set);
    sigaddset(&usr1_set, SIGUSR1);
    mask_usr1(SIG_BLOCK); /* before READY: a SIGUSR1 stays pending for sigtimedwait */
}

static void kill_sigwait_notify(void)
{
    if (kill(sigwait_child_pid, SIGUSR1))
        fail("kill (child)", errno);
}

static const process_experiment_t KILL_SIGWAIT_CHILD = {
    .parent_init = kill_sigwait_parent_init,
    .child_init = kill_sigwait_child_init,
    .drain = sigwait_prepare,
    .wait = sigwait_wait,
    .notify = kill_sigwait_notify,
};

/* ------------------------------------------------------------------ */
/* native-self-signal: kill(getpid(), SIGUSR1) in a single-threaded
 * process; the handler stamps t1 and sets a flag the main thread spins on. */

static volatile sig_atomic_t self_seen;
static volatile int64_t self_t1;
static pid_t self_pid;

static void self_handler(int signum)
{
    int64_t t1 = now_ns(); /* clock_gettime is async-signal-safe */
    (void)signum;
    self_t1 = t1;
    self_seen = 1;
}

static void self_notify(void)
{
    if (kill(self_pid, SIGUSR1))
        fail("kill", errno);
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
    /* The parent's mask is inherited: make sure SIGUSR1 is deliverable. */
    mask_usr1(SIG_UNBLOCK);

    self_pid = getpid();
    notify_fn = self_notify;
    step_fn step = chosen_step();
    int64_t timeout_ns = (int64_t)P.timeout_ms * 1000000;
    for (long i = 0; i < total; i++) {
        step_fn fire = step_for(i, step);
        self_seen = 0;
        self_t1 = 0;
        int64_t t0 = fire();
        while (!self_seen) {
            if (now_ns() - t0 > timeout_ns)
                break;
        }
        samples[i] = wake_record(t0, self_seen ? self_t1 : 0);
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
/* Storm receivers (wakelab.core.drivers.storm)                        */
/*
 * The receiving end of a signal storm whose senders are other processes:
 * wakelab's storm driver starts this program and them, and talks to it on
 * stdin and stdout (a line each way):
 *   > wakelab-storm 1 ready PID     once the receiver is set up
 *   < free                          the main thread runs its work loop for free_ms
 *   > free CHUNKS NS                ... CHUNKS chunks of work in NS ns (the storm-free rate)
 *   < storm                         the work loop starts, and runs until "stop" (or stdin ends)
 *   > storming
 *   < stop
 *   > storm CHUNKS NS DELIVERED FLUSHED RECORDED
 *   > RECORDED lines, each one delivery's t1 (CLOCK_MONOTONIC ns), in order
 *   > end storm
 * After "stop" the work loop ends and deliveries are awaited until none
 * came for quiet_ms (at most timeout_ms); then the signal is blocked and
 * whatever is still pending is consumed with sigtimedwait: FLUSHED, never
 * counted delivered.
 *   storm-handler  a sigaction handler (SA_RESTART) runs for each delivery:
 *                  it counts, and keeps its first clock reading (t1) for the
 *                  first cap= deliveries;
 *   storm-sigwait  the signal is blocked in every thread, and a thread loops
 *                  in sigtimedwait (10 ms at a time): t1 is the first
 *                  statement after it returns with the signal.
 * DELIVERED counts the handler's runs or sigtimedwait's returns: how many
 * times the receiving code ran for the signal.  The control thread that
 * reads stdin during the storm blocks the signal, so it reaches the main
 * thread (handler) or the waiting thread (sigwait) only.
 */

static void finish_output(void);
static int64_t *alloc_samples(long total);

static volatile long storm_delivered;
static int64_t *storm_t1;
static volatile int storm_waiting = 1;  /* the sigwait thread runs while this is 1 */
static volatile int storm_working = 1;  /* the work loop runs while this is 1 */
static volatile long storm_sink;

static void storm_record(void)
{
    int64_t t = now_ns();
    long i = storm_delivered;
    if (i < P.cap)
        storm_t1[i] = t;
    storm_delivered = i + 1;
}

static void storm_handler(int signum)
{
    (void)signum;
    storm_record();
}

static void *storm_sigwait_loop(void *unused)
{
    (void)unused;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, (int)P.signo);
    struct timespec slice = {0, 10000000};
    while (storm_waiting) {
        int rc = sigtimedwait(&set, NULL, &slice);
        if (rc == (int)P.signo)
            storm_record();
        else if (rc < 0 && errno != EAGAIN && errno != EINTR)
            fail("sigtimedwait", errno);
    }
    return NULL;
}

/* One chunk of work: a loop the compiler may not remove. */
static void storm_chunk(void)
{
    for (long i = 0; i < 10000; i++)
        storm_sink += i;
}

/* The work loop: chunks until *flag is 0, or until until_ns (0: no end but the flag). */
static void storm_work(volatile int *flag, int64_t until_ns, long *chunks, int64_t *ns)
{
    int64_t start = now_ns();
    long count = 0;
    while (*flag && (until_ns == 0 || now_ns() < until_ns)) {
        storm_chunk();
        count++;
    }
    *chunks = count;
    *ns = now_ns() - start;
}

static void storm_block_here(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, (int)P.signo);
    int rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rc)
        fail("pthread_sigmask", rc);
}

/* A line from stdin without its newline; "" at its end. */
static void storm_read_line(char *line, size_t size)
{
    if (!fgets(line, (int)size, stdin)) {
        line[0] = 0;
        return;
    }
    line[strcspn(line, "\n")] = 0;
}

static void *storm_control_loop(void *unused)
{
    (void)unused;
    char line[64];
    storm_block_here();
    do
        storm_read_line(line, sizeof line);
    while (line[0] && strcmp(line, "stop"));
    storm_working = 0;
    return NULL;
}

static void storm_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void storm_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    finish_output();
}

static void run_storm(int sigwait_mode)
{
    char line[64];
    int signo = (int)P.signo;
    pthread_t waiter, control;
    storm_t1 = alloc_samples(P.cap);
    pin_self(P.waiter_cpu, "waiter"); /* the receiver is the waiter: its policy and CPU */
    if (sigwait_mode) {
        storm_block_here(); /* before any thread: every thread inherits the block */
        int rc = pthread_create(&waiter, NULL, storm_sigwait_loop, NULL);
        if (rc)
            fail("pthread_create", rc);
    } else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = storm_handler;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        if (sigaction(signo, &sa, NULL))
            fail("sigaction", errno);
    }
    storm_say("wakelab-storm 1 ready %ld\n", (long)getpid());
    long chunks;
    int64_t ns;
    storm_read_line(line, sizeof line);
    if (strcmp(line, "free"))
        failf("expected 'free' on stdin, got '%s'", line);
    volatile int always = 1;
    storm_work(&always, now_ns() + (int64_t)P.free_ms * 1000000, &chunks, &ns);
    storm_say("free %ld %lld\n", chunks, (long long)ns);
    storm_read_line(line, sizeof line);
    if (strcmp(line, "storm"))
        failf("expected 'storm' on stdin, got '%s'", line);
    /* The control thread starts with the signal blocked (it inherits this thread's mask): a
     * delivery to it before it could block the signal itself would race the main thread's count. */
    sigset_t only, before;
    sigemptyset(&only);
    sigaddset(&only, signo);
    int rc = pthread_sigmask(SIG_BLOCK, &only, &before);
    if (rc)
        fail("pthread_sigmask", rc);
    rc = pthread_create(&control, NULL, storm_control_loop, NULL);
    if (rc)
        fail("pthread_create", rc);
    rc = pthread_sigmask(SIG_SETMASK, &before, NULL);
    if (rc)
        fail("pthread_sigmask", rc);
    storm_say("storming\n");
    storm_work(&storm_working, 0, &chunks, &ns);
    rc = pthread_join(control, NULL);
    if (rc)
        fail("pthread_join", rc);
    /* The drain: until no delivery for quiet_ms, at most timeout_ms. */
    int64_t deadline = now_ns() + (int64_t)P.timeout_ms * 1000000;
    int64_t quiet_ns = (int64_t)P.quiet_ms * 1000000;
    long seen = storm_delivered;
    int64_t changed = now_ns();
    while (now_ns() < deadline) {
        sleep_us(1000);
        if (storm_delivered != seen) {
            seen = storm_delivered;
            changed = now_ns();
        } else if (now_ns() - changed >= quiet_ns) {
            break;
        }
    }
    if (sigwait_mode) {
        storm_waiting = 0;
        rc = pthread_join(waiter, NULL);
        if (rc)
            fail("pthread_join", rc);
    } else {
        storm_block_here();
    }
    /* Whatever is still pending reached no code: consume it, count it. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    struct timespec zero = {0, 0};
    long flushed = 0;
    while (flushed < 100000000L && sigtimedwait(&set, NULL, &zero) == signo)
        flushed++;
    long delivered = storm_delivered;
    long recorded = delivered < P.cap ? delivered : P.cap;
    printf("storm %ld %lld %ld %ld %ld\n", chunks, (long long)ns, delivered, flushed, recorded);
    for (long i = 0; i < recorded; i++)
        printf("%lld\n", (long long)storm_t1[i]);
    fputs("end storm\n", stdout);
    finish_output();
}

/* ------------------------------------------------------------------ */
/* Command line and output                                              */

static const struct {
    const char *name;
    const thread_experiment_t *thread;
    const process_experiment_t *process;
} EXPERIMENTS[] = {
    {"native-condvar", &CONDVAR, NULL},
    {"native-pipe", &PIPE, NULL},
    {"native-eventfd", &EVENTFD, NULL},
    {"native-socketpair", &SOCKETPAIR, NULL},
    {"native-selector-pipe", &SELECTOR_PIPE, NULL},
    {"native-sigwait", &SIGWAIT, NULL},
    {"native-pause-handler", &PAUSE_HANDLER, NULL},
    {"native-wakeup-fd-select", &WAKEUP_FD_SELECT, NULL},
    {"native-pipe-process", NULL, &PIPE_PROCESS},
    {"native-eventfd-fork", NULL, &EVENTFD_FORK},
    {"native-kill-sigwait-child", NULL, &KILL_SIGWAIT_CHILD},
    {"native-self-signal", NULL, NULL},
};

#define N_EXPERIMENTS (sizeof EXPERIMENTS / sizeof EXPERIMENTS[0])

static void usage(const char *msg)
{
    fprintf(stderr, "wakelab_floor: %s\nusage: wakelab_floor EXPERIMENT [key=value ...]\nexperiments:", msg);
    for (size_t k = 0; k < N_EXPERIMENTS; k++)
        fprintf(stderr, " %s", EXPERIMENTS[k].name);
    fprintf(stderr,
            " native-sigaction-install selftest\n"
            "storm receivers: storm-handler storm-sigwait\n"
            "keys: n warmup settle_us timeout_ms planted_delay_us planted_after_us install_n\n"
            "      rounds warmup_rounds notifier_cpu waiter_cpu lose_every stamps cpus settles\n"
            "      waiter_policy waiter_priority notifier_policy notifier_priority\n"
            "      signo cap free_ms quiet_ms (storm receivers)\n");
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
        {"planted_after_us", &P.planted_after_us, 0},
        {"install_n", &P.install_n, 1},
        {"rounds", &P.rounds, 1},
        {"warmup_rounds", &P.warmup_rounds, 0},
        {"lose_every", &P.lose_every, 0},
        {"notifier_cpu", &P.notifier_cpu, -1},
        {"waiter_cpu", &P.waiter_cpu, -1},
        {"parent_pid", &P.parent_pid, 0},
        {"stamps", &P.stamps, 0},
        {"cpus", &P.cpus, 0},
        {"settles", &P.settles, 0},
        {"waiter_policy", &P.waiter_policy, -1},
        {"waiter_priority", &P.waiter_priority, 0},
        {"notifier_policy", &P.notifier_policy, -1},
        {"notifier_priority", &P.notifier_priority, 0},
        {"signo", &P.signo, 1},
        {"cap", &P.cap, 1},
        {"free_ms", &P.free_ms, 0},
        {"quiet_ms", &P.quiet_ms, 1},
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
        else if (samples[i] == STALE)
            fputs("stale\n", stdout);
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
    /* A write to a pipe or socket whose reader died is an error here, not a death (as in Python). */
    signal(SIGPIPE, SIG_IGN);
    /* Die with the worker that started us: nothing outlives wakelab, however it is killed. */
    if (P.parent_pid) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL))
            fail("prctl (PR_SET_PDEATHSIG)", errno);
        if ((long)getppid() != P.parent_pid) /* the parent died before the line above */
            _exit(3);
    }

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

    if (!strcmp(name, "storm-handler") || !strcmp(name, "storm-sigwait")) {
        run_storm(!strcmp(name, "storm-sigwait"));
        return 0;
    }

    size_t k = 0;
    while (k < N_EXPERIMENTS && strcmp(name, EXPERIMENTS[k].name))
        k++;
    if (k == N_EXPERIMENTS)
        usage("unknown experiment");

    long total = P.warmup + P.n;
    int64_t *samples = alloc_samples(total);
    int with_waiter = 1;
    if (P.settles)
        read_settles(total);
    if (P.stamps)
        T0S = alloc_samples(total);
    if (P.cpus && (EXPERIMENTS[k].thread || EXPERIMENTS[k].process)) {
        NCPUS = calloc((size_t)total, sizeof *NCPUS);
        WCPUS = calloc((size_t)total, sizeof *WCPUS);
        if (!NCPUS || !WCPUS)
            fail("calloc (cpus)", errno);
    }
    if (EXPERIMENTS[k].thread)
        run_thread_experiment(EXPERIMENTS[k].thread, samples, total);
    else if (EXPERIMENTS[k].process)
        run_process_experiment(EXPERIMENTS[k].process, samples, total);
    else {
        run_self_signal(samples, total);
        with_waiter = 0;
    }
    print_latency(name, samples, total, with_waiter);
    if (NCPUS) {
        printf("cpus %ld\n", total);
        for (long i = 0; i < total; i++)
            printf("%d %d\n", NCPUS[i], WCPUS[i]);
        fputs("end cpus\n", stdout);
        finish_output();
    }
    if (P.stamps && with_waiter) {
        printf("stamps notifier_tid=%ld waiter_tid=%ld %ld\n", notifier_tid, waiter_tid, total);
        for (long i = 0; i < total; i++)
            printf("%lld\n", (long long)T0S[i]);
        fputs("end stamps\n", stdout);
        finish_output();
    }
    return 0;
}
