#define _GNU_SOURCE /* dl_iterate_phdr */
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "CLinux.h"

static int disabled;

/* No transparent huge pages for this process, set before main and so before any thread. With
   THP "always" (Debian's kernels) the first touch of a thread's 8 MiB stack can bring in a
   whole 2 MiB page: bleadvd held 2 MiB of stack for the few KiB its threads use. Swift's async
   main starts its threads before any Swift code runs, hence a constructor. */
__attribute__((constructor)) static void disable_transparent_huge_pages(void) {
    disabled = prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0;
}

/* Every block of 128 KiB or more is mapped on its own and unmapped when freed. glibc's default
   raises that threshold to the size of each such block freed (up to 32 MiB), after which big
   buffers come from the heap and stay there: a refused 640 KB config reloaded 40 times kept
   2.5 MB, one 30 MB call from any user kept 30 MB (libdbus's receive buffer). Setting the
   threshold turns the raising off; measured in docs/RELIABILITY.md. */
__attribute__((constructor)) static void return_big_blocks(void) {
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

int bleadvd_transparent_huge_pages_disabled(void) {
    return disabled;
}

int bleadvd_adopt_orphans(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

/* The pages of the files bleadvd runs that are mapped read-only: the code, read-only data and
   the dynamic loader's tables of bleadvd's own file and of each shared library (the part of
   every PT_LOAD segment without PF_W that the file holds, of every object the loader lists but
   the kernel's vDSO). Start-up reads far more of them than the running daemon needs (the
   argument parser, the config reader, the loader's relocations and symbols, libstdc++'s locale
   set-up), and the kernel maps each fault's neighbours too (fault-around, up to 64 KiB), so
   they stay counted in bleadvd's memory: this drops them, as the kernel would under pressure.
   Only pages that are still the file's go: a page that was written in this process is a
   private copy (a debugger's or a uprobe's breakpoint, the zeros the loader writes after a
   segment's file part), and dropping it would lose what was written, so every page that
   /proc/self/pagemap says is present and not the file's is left alone, and without pagemap
   nothing is dropped. What runs next reads its pages back from the page cache. */
#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_FILE (1ULL << 61)

struct release {
    int pagemap;
    uintptr_t page;
    long dropped;
};

/* Drops the pages of [start, end) that are the file's, in runs between the written ones. */
static void release_range(struct release *release, uintptr_t start, uintptr_t end) {
    uint64_t entries[512];
    uintptr_t run = start;
    for (uintptr_t at = start; at < end;) {
        size_t count = (end - at) / release->page;
        if (count > 512) count = 512;
        off_t offset = (off_t)(at / release->page * sizeof(uint64_t));
        if (pread(release->pagemap, entries, count * sizeof(uint64_t), offset) != (ssize_t)(count * sizeof(uint64_t))) return;
        for (size_t i = 0; i < count; i++, at += release->page) {
            if ((entries[i] & PAGEMAP_PRESENT) && !(entries[i] & PAGEMAP_FILE)) {
                if (at > run && madvise((void *)run, at - run, MADV_DONTNEED) == 0) release->dropped += (long)(at - run);
                run = at + release->page;
            }
        }
    }
    if (end > run && madvise((void *)run, end - run, MADV_DONTNEED) == 0) release->dropped += (long)(end - run);
}

static int release_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct release *release = data;
    if (info->dlpi_addr == (ElfW(Addr))getauxval(AT_SYSINFO_EHDR)) return 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr); d->d_tag != DT_NULL; d++) {
            if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL))) return 0;
        }
    }
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W)) continue;
        uintptr_t low = info->dlpi_addr + segment->p_vaddr, high = low + segment->p_filesz;
        uintptr_t start = (low + release->page - 1) & ~(release->page - 1), end = high & ~(release->page - 1);
        if (end > start) release_range(release, start, end);
    }
    return 0;
}

long bleadvd_release_read_only_pages(void) {
    struct release release = { open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), (uintptr_t)sysconf(_SC_PAGESIZE), 0 };
    if (release.pagemap < 0) return 0;
    dl_iterate_phdr(release_object, &release);
    close(release.pagemap);
    return release.dropped;
}
