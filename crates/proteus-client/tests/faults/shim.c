/*
 * The file shim of tests/io_faults.rs (issue 36, faults 2 and 3), loaded with LD_PRELOAD into a
 * child run of that test. It sees the system calls SQLite makes on the files under one
 * directory, counts them, and injects a fault at the Nth one:
 *
 *   FAULT_PREFIX  the directory (canonical, with a trailing '/'): only files under it are seen
 *   FAULT_TRACE   a file the shim appends one line per call to ("w 12 bob.db-wal 4152 24": the
 *                 12th write, its file, offset and length; "s 3 bob.db-wal": the 3rd sync),
 *                 and a line starting with '!' where it injects
 *   FAULT_MODE    count            only count
 *                 eio-write        the Nth write and every later one fail with EIO
 *                 eio-sync         the Nth sync and every later one fail with EIO; what they
 *                                  were to sync stays in the file
 *                 eio-sync-lost    the same, and what they were to sync is lost (the kernel
 *                                  dropped the pages whose writeback failed)
 *                 crash-dropped    power loss at the Nth sync: every write since the file's last
 *                                  sync undone (data and size), then _exit(86)
 *                 crash-torn       power loss at the Nth sync: the last write torn (the first
 *                                  512-byte sector it touches, and every other one after, as
 *                                  they were before it: a write within one sector is lost
 *                                  whole), the earlier unsynced writes on disk; _exit(86)
 *                 crash-scattered  power loss at the Nth sync: the odd sectors of every write
 *                                  since the last sync as they were at that sync (written out of
 *                                  order, half of them not), sizes as written; _exit(86)
 *                 crash-torn-write power loss during the Nth write: it torn as in crash-torn, the
 *                                  unsynced writes before it on disk, none after; _exit(86)
 *   FAULT_AT      N (from 1): the write (eio-write, crash-torn-write) or sync (the others) to
 *                 fault at
 *   FAULT_LIFT    a file: once it exists, the EIO modes stop failing (the fault is gone)
 *
 * Writes are write, pwrite(64), writev, pwritev(64), ftruncate(64), fallocate and
 * posix_fallocate; syncs are fsync, fdatasync and sync_file_range (SQLite uses pwrite64,
 * ftruncate and fsync on Linux). The -shm file (SQLite's shared-memory index, written through a
 * mapping and rebuilt after a crash) is counted but never reverted. Directory entries are not
 * modelled: SQLite syncs the directory after creating a WAL, and the runs create files only
 * when the store opens.
 *
 * Licence: MIT OR Apache-2.0, as the rest of the repository.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 4096
#define MAX_FILES 64
#define SECTOR 512
#define CRASH_EXIT 86

enum mode {
    COUNT,
    EIO_WRITE,
    EIO_SYNC,
    EIO_SYNC_LOST,
    CRASH_DROPPED,
    CRASH_TORN,
    CRASH_SCATTERED,
    CRASH_TORN_WRITE
};

/* One write (or truncation) not synced yet: what it replaced. */
struct undo {
    int file;
    off_t off;          /* where it starts (a truncation: the new size) */
    size_t len;         /* bytes written (a truncation: 0) */
    unsigned char *old; /* the bytes it replaced that existed: [off, off + n_old) */
    size_t n_old;
    off_t size_before;  /* the file's size before it */
    int truncate;
    int live;           /* 0 once synced (or lost) */
};

struct file {
    char path[4096];
    int shm;
};

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_fallocate)(int, int, off_t, off_t);
static int (*real_posix_fallocate)(int, off_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sync_file_range)(int, off_t, off_t, unsigned int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static int (*real_unlink)(const char *);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ready;
static enum mode mode = COUNT;
static long fault_at = -1;
static char prefix[4096];
static char lift[4096];
static int lifted;
static int trace_fd = -1;
static long writes, syncs;
static int last_file; /* of the last write */

static int fd_file[MAX_FDS]; /* file index + 1, 0: not ours */
static struct file files[MAX_FILES];
static int n_files;
static struct undo *log_;
static size_t n_log, cap_log;

#define REAL(name) real_##name = dlsym(RTLD_NEXT, #name)

static void init(void) {
    if (ready)
        return;
    REAL(write); REAL(pwrite); REAL(pwrite64); REAL(writev); REAL(pwritev); REAL(pwritev64);
    REAL(pread); REAL(ftruncate); REAL(ftruncate64); REAL(fallocate); REAL(posix_fallocate);
    REAL(fsync); REAL(fdatasync); REAL(sync_file_range); REAL(open); REAL(open64);
    REAL(openat); REAL(openat64); REAL(close); REAL(unlink);
    const char *p = getenv("FAULT_PREFIX");
    if (p)
        snprintf(prefix, sizeof prefix, "%s", p);
    const char *l = getenv("FAULT_LIFT");
    if (l)
        snprintf(lift, sizeof lift, "%s", l);
    const char *m = getenv("FAULT_MODE");
    if (m) {
        if (!strcmp(m, "eio-write")) mode = EIO_WRITE;
        else if (!strcmp(m, "eio-sync")) mode = EIO_SYNC;
        else if (!strcmp(m, "eio-sync-lost")) mode = EIO_SYNC_LOST;
        else if (!strcmp(m, "crash-dropped")) mode = CRASH_DROPPED;
        else if (!strcmp(m, "crash-torn")) mode = CRASH_TORN;
        else if (!strcmp(m, "crash-scattered")) mode = CRASH_SCATTERED;
        else if (!strcmp(m, "crash-torn-write")) mode = CRASH_TORN_WRITE;
        else if (strcmp(m, "count")) {
            fprintf(stderr, "fault shim: unknown FAULT_MODE %s\n", m);
            _exit(2);
        }
    }
    const char *n = getenv("FAULT_AT");
    if (n)
        fault_at = atol(n);
    const char *t = getenv("FAULT_TRACE");
    if (t)
        trace_fd = real_open(t, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ready = 1;
}

__attribute__((constructor)) static void shim_init(void) {
    init();
}

static void trace(const char *fmt, ...) {
    if (trace_fd < 0)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    real_write(trace_fd, line, (size_t)n);
}

static const char *base(int file) {
    const char *s = strrchr(files[file].path, '/');
    return s ? s + 1 : files[file].path;
}

/* The file index of a path under the prefix, registered on first sight; -1 if not ours. */
static int file_of_path(const char *path) {
    if (!prefix[0] || strncmp(path, prefix, strlen(prefix)) != 0)
        return -1;
    for (int i = 0; i < n_files; i++)
        if (!strcmp(files[i].path, path))
            return i;
    if (n_files == MAX_FILES)
        return -1;
    snprintf(files[n_files].path, sizeof files[n_files].path, "%s", path);
    size_t len = strlen(path);
    files[n_files].shm = len > 4 && !strcmp(path + len - 4, "-shm");
    return n_files++;
}

static void track(int fd) {
    if (fd < 0 || fd >= MAX_FDS)
        return;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) {
        fd_file[fd] = 0;
        return;
    }
    path[n] = 0;
    pthread_mutex_lock(&lock);
    fd_file[fd] = file_of_path(path) + 1;
    pthread_mutex_unlock(&lock);
}

static int ours(int fd) {
    return fd >= 0 && fd < MAX_FDS && fd_file[fd] ? fd_file[fd] - 1 : -1;
}

static off_t size_of(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : 0;
}

static int power_loss(void) {
    return mode == CRASH_DROPPED || mode == CRASH_TORN || mode == CRASH_SCATTERED ||
           mode == CRASH_TORN_WRITE;
}

static void push(struct undo u) {
    if (n_log == cap_log) {
        cap_log = cap_log ? cap_log * 2 : 256;
        log_ = realloc(log_, cap_log * sizeof *log_);
        if (!log_)
            _exit(3);
    }
    log_[n_log++] = u;
}

/* Before a write of `len` bytes at `off` (or a truncation to `off`): remembers what it replaces. */
static void record(int fd, int file, off_t off, size_t len, int truncate) {
    if (!(power_loss() || mode == EIO_SYNC_LOST) || files[file].shm)
        return;
    struct undo u = {.file = file, .off = off, .len = len, .truncate = truncate, .live = 1};
    u.size_before = size_of(fd);
    off_t end = truncate ? u.size_before : off + (off_t)len;
    if (end > u.size_before)
        end = u.size_before;
    if (end > off) {
        u.n_old = (size_t)(end - off);
        u.old = malloc(u.n_old);
        if (!u.old)
            _exit(3);
        size_t got = 0;
        while (got < u.n_old) {
            ssize_t r = real_pread(fd, u.old + got, u.n_old - got, off + (off_t)got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        u.n_old = got;
    }
    push(u);
}

/* Puts back the bytes of `u` in [from, to) (clipped to what it covered): its old bytes where
 * the file had them, zeros past its old end. */
static void restore_range(int fd, const struct undo *u, off_t from, off_t to) {
    static const unsigned char zeros[SECTOR];
    off_t start = u->off;
    off_t end = u->truncate ? u->size_before : u->off + (off_t)u->len;
    if (from < start) from = start;
    if (to > end) to = end;
    for (off_t p = from; p < to;) {
        off_t old_end = u->off + (off_t)u->n_old;
        if (p < old_end) {
            off_t stop = to < old_end ? to : old_end;
            real_pwrite(fd, u->old + (p - u->off), (size_t)(stop - p), p);
            p = stop;
        } else {
            off_t stop = to < p + SECTOR ? to : p + SECTOR;
            real_pwrite(fd, zeros, (size_t)(stop - p), p);
            p = stop;
        }
    }
}

/* Every other sector of `u`'s range, within the file's current size: the sectors of odd index
 * (by file offset), or (`from_first`) the first sector it touches and every other one after. */
static void restore_sectors(int fd, const struct undo *u, int from_first) {
    off_t size = size_of(fd);
    off_t end = u->truncate ? u->size_before : u->off + (off_t)u->len;
    if (end > size) end = size;
    off_t first = u->off / SECTOR;
    for (off_t s = first; s * SECTOR < end; s++)
        if (from_first ? (s - first) % 2 == 0 : s % 2 == 1)
            restore_range(fd, u, s * SECTOR, (s + 1) * SECTOR);
}

static void undo_whole(int fd, const struct undo *u) {
    if (u->truncate) {
        real_ftruncate(fd, u->size_before);
        restore_range(fd, u, u->off, u->size_before);
    } else {
        restore_range(fd, u, u->off, u->off + (off_t)u->len);
        real_ftruncate(fd, u->size_before);
    }
}

/* Undoes the live records (of `only`, or of every file if -1), newest first, as `how` says. */
static void revert(int only, enum mode how) {
    int fds[MAX_FILES];
    for (int i = 0; i < MAX_FILES; i++) fds[i] = -2;
    long last = -1;
    for (size_t i = 0; i < n_log; i++)
        if (log_[i].live && (only < 0 || log_[i].file == only))
            last = (long)i;
    for (long i = (long)n_log - 1; i >= 0; i--) {
        struct undo *u = &log_[i];
        if (!u->live || (only >= 0 && u->file != only))
            continue;
        if (fds[u->file] == -2)
            fds[u->file] = real_open(files[u->file].path, O_WRONLY | O_CLOEXEC);
        int fd = fds[u->file];
        if (fd >= 0) {
            if (how == CRASH_SCATTERED)
                restore_sectors(fd, u, 0);
            else if (how == CRASH_TORN && i == last && !u->truncate)
                restore_sectors(fd, u, 1);
            else if (how != CRASH_TORN)
                undo_whole(fd, u);
        }
        u->live = 0;
    }
    for (int i = 0; i < MAX_FILES; i++)
        if (fds[i] >= 0)
            real_close(fds[i]);
}

static int lifted_now(void) {
    if (!lifted && lift[0] && access(lift, F_OK) == 0)
        lifted = 1;
    return lifted;
}

/* Before a write to `fd`: counts it and traces it. Returns -1 (errno EIO) to fail it, 1 if the
 * power is to go out once it is made (see after_write), 0 otherwise. */
static int before_write(int fd, off_t off, size_t len, int truncate) {
    init();
    int file = ours(fd);
    if (file < 0)
        return 0;
    pthread_mutex_lock(&lock);
    long n = ++writes;
    last_file = file;
    trace("%c %ld %s %lld %zu", truncate ? 't' : 'w', n, base(file), (long long)off, len);
    int fail = mode == EIO_WRITE && n >= fault_at && !lifted_now();
    if (fail)
        trace("! eio write %ld %s", n, base(file));
    else
        record(fd, file, off, len, truncate);
    pthread_mutex_unlock(&lock);
    if (fail) {
        errno = EIO;
        return -1;
    }
    return mode == CRASH_TORN_WRITE && n == fault_at;
}

/* After a write `before_write` returned 1 for: the power goes out, the write torn. */
static void after_write(void) {
    pthread_mutex_lock(&lock);
    trace("! crash crash-torn-write write %ld %s", writes, base(last_file));
    revert(-1, CRASH_TORN);
    _exit(CRASH_EXIT);
}

/* A sync of `fd`: counts it, injects (EIO, or power loss and exit), or syncs. */
static int do_sync(int fd, int (*real)(int)) {
    init();
    int file = ours(fd);
    if (file < 0)
        return real(fd);
    pthread_mutex_lock(&lock);
    long n = ++syncs;
    trace("s %ld %s", n, base(file));
    if (power_loss() && n == fault_at) {
        trace("! crash %s sync %ld %s", getenv("FAULT_MODE"), n, base(file));
        revert(-1, mode);
        _exit(CRASH_EXIT);
    }
    if ((mode == EIO_SYNC || mode == EIO_SYNC_LOST) && n >= fault_at && !lifted_now()) {
        trace("! eio sync %ld %s", n, base(file));
        if (mode == EIO_SYNC_LOST)
            revert(file, CRASH_DROPPED);
        pthread_mutex_unlock(&lock);
        errno = EIO;
        return -1;
    }
    int rc = real(fd);
    if (rc == 0)
        for (size_t i = 0; i < n_log; i++)
            if (log_[i].file == file)
                log_[i].live = 0;
    pthread_mutex_unlock(&lock);
    return rc;
}

static off_t position(int fd) {
    return lseek(fd, 0, SEEK_CUR);
}

static size_t iov_len(const struct iovec *iov, int n) {
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += iov[i].iov_len;
    return len;
}

ssize_t write(int fd, const void *buf, size_t len) {
    init();
    int fault = ours(fd) >= 0 ? before_write(fd, position(fd), len, 0) : 0;
    if (fault < 0)
        return -1;
    ssize_t rc = real_write(fd, buf, len);
    if (fault)
        after_write();
    return rc;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off) {
    int fault = before_write(fd, off, len, 0);
    if (fault < 0)
        return -1;
    ssize_t rc = real_pwrite(fd, buf, len, off);
    if (fault)
        after_write();
    return rc;
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off) {
    int fault = before_write(fd, off, len, 0);
    if (fault < 0)
        return -1;
    ssize_t rc = real_pwrite64(fd, buf, len, off);
    if (fault)
        after_write();
    return rc;
}

ssize_t writev(int fd, const struct iovec *iov, int n) {
    init();
    int fault = ours(fd) >= 0 ? before_write(fd, position(fd), iov_len(iov, n), 0) : 0;
    if (fault < 0)
        return -1;
    ssize_t rc = real_writev(fd, iov, n);
    if (fault)
        after_write();
    return rc;
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off) {
    int fault = before_write(fd, off, iov_len(iov, n), 0);
    if (fault < 0)
        return -1;
    ssize_t rc = real_pwritev(fd, iov, n, off);
    if (fault)
        after_write();
    return rc;
}

ssize_t pwritev64(int fd, const struct iovec *iov, int n, off_t off) {
    int fault = before_write(fd, off, iov_len(iov, n), 0);
    if (fault < 0)
        return -1;
    ssize_t rc = real_pwritev64(fd, iov, n, off);
    if (fault)
        after_write();
    return rc;
}

int ftruncate(int fd, off_t size) {
    int fault = before_write(fd, size, 0, 1);
    if (fault < 0)
        return -1;
    int rc = real_ftruncate(fd, size);
    if (fault)
        after_write();
    return rc;
}

int ftruncate64(int fd, off_t size) {
    int fault = before_write(fd, size, 0, 1);
    if (fault < 0)
        return -1;
    int rc = real_ftruncate64(fd, size);
    if (fault)
        after_write();
    return rc;
}

int fallocate(int fd, int flags, off_t off, off_t len) {
    int fault = before_write(fd, off, (size_t)len, 0);
    if (fault < 0)
        return -1;
    int rc = real_fallocate(fd, flags, off, len);
    if (fault)
        after_write();
    return rc;
}

int posix_fallocate(int fd, off_t off, off_t len) {
    int fault = before_write(fd, off, (size_t)len, 0);
    if (fault < 0)
        return EIO;
    int rc = real_posix_fallocate(fd, off, len);
    if (fault)
        after_write();
    return rc;
}

int fsync(int fd) {
    return do_sync(fd, real_fsync);
}

int fdatasync(int fd) {
    return do_sync(fd, real_fdatasync);
}

static int sync_range_fd(int fd) {
    return real_fdatasync(fd);
}

int sync_file_range(int fd, off_t off, off_t len, unsigned int flags) {
    init();
    if (ours(fd) < 0)
        return real_sync_file_range(fd, off, len, flags);
    return do_sync(fd, sync_range_fd);
}

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
    init();
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_open(path, flags, m);
    track(fd);
    return fd;
}

int open64(const char *path, int flags, ...) {
    init();
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_open64(path, flags, m);
    track(fd);
    return fd;
}

int openat(int dir, const char *path, int flags, ...) {
    init();
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_openat(dir, path, flags, m);
    track(fd);
    return fd;
}

int openat64(int dir, const char *path, int flags, ...) {
    init();
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_openat64(dir, path, flags, m);
    track(fd);
    return fd;
}

int close(int fd) {
    init();
    if (fd >= 0 && fd < MAX_FDS)
        fd_file[fd] = 0;
    return real_close(fd);
}

/* A file unlinked is gone: its unsynced writes are not undone into a later file of its name. */
int unlink(const char *path) {
    init();
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_files; i++)
        if (!strcmp(files[i].path, path))
            for (size_t j = 0; j < n_log; j++)
                if (log_[j].file == i)
                    log_[j].live = 0;
    pthread_mutex_unlock(&lock);
    return real_unlink(path);
}
