#define _GNU_SOURCE /* dl_iterate_phdr */
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
   the dynamic loader's tables of bleadvd's own file and of each shared library (every PT_LOAD
   segment without PF_W, of every object the loader lists but the kernel's vDSO). Start-up reads
   far more of them than the running daemon needs (the argument parser, the config reader, the
   loader's relocations and symbols, libstdc++'s locale set-up), and the kernel maps each
   fault's neighbours too (fault-around, up to 64 KiB), so they stay counted in bleadvd's memory:
   this drops them, as the kernel would under pressure. They are clean pages of their files,
   never written (an object with text relocations is left alone), so what runs next reads its
   pages back from the page cache; the relocated data (RELRO, in the writable segments) is never
   touched. */
static int release_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    long *dropped = data;
    if (info->dlpi_addr == (ElfW(Addr))getauxval(AT_SYSINFO_EHDR)) return 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
        for (const ElfW(Dyn) *d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr); d->d_tag != DT_NULL; d++) {
            if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS && (d->d_un.d_val & DF_TEXTREL))) return 0;
        }
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W)) continue;
        uintptr_t low = info->dlpi_addr + segment->p_vaddr, high = low + segment->p_memsz;
        uintptr_t start = (low + page - 1) & ~(page - 1), end = high & ~(page - 1);
        if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) == 0) *dropped += (long)(end - start);
    }
    return 0;
}

long bleadvd_release_read_only_pages(void) {
    long dropped = 0;
    dl_iterate_phdr(release_object, &dropped);
    return dropped;
}
