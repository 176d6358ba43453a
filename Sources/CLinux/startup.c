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

/* The dynamic loader's tables in bleadvd's own file: the symbols, their names and hashes, the
   versions and the relocations (.dynsym to .rela.dyn, 1.3 MB of a 16 MB binary). ld.so reads
   them all at start to relocate the executable, and hardly ever after (a lazily bound call or
   a dlopen looks up a few symbols). Their pages stay mapped, and counted in bleadvd's memory,
   until dropped: this drops them, as the kernel would under pressure. They are clean file
   pages: a later lookup reads them back from the page cache or the file. */
extern ElfW(Dyn) _DYNAMIC[];

long bleadvd_release_loader_tables(void) {
    uintptr_t bias = (uintptr_t)getauxval(AT_PHDR);
    const ElfW(Phdr) *phdr = (const ElfW(Phdr) *)bias;
    unsigned long count = getauxval(AT_PHNUM);
    for (unsigned long i = 0; i < count; i++) {
        if (phdr[i].p_type == PT_PHDR) {
            bias -= phdr[i].p_vaddr;
            break;
        }
    }
    uintptr_t low = UINTPTR_MAX, high = 0, rela = 0, relasz = 0;
    for (const ElfW(Dyn) *d = _DYNAMIC; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: case DT_STRTAB: case DT_GNU_HASH: case DT_VERSYM: case DT_RELA:
            /* glibc's ld.so turns these into addresses; another loader may leave offsets. */
            {
                uintptr_t at = d->d_un.d_ptr < bias ? d->d_un.d_ptr + bias : d->d_un.d_ptr;
                if (at < low) low = at;
                if (d->d_tag == DT_RELA) rela = at;
            }
            break;
        case DT_RELASZ:
            relasz = d->d_un.d_val;
            break;
        }
    }
    if (!rela || !relasz) return 0;
    high = rela + relasz;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (low + page - 1) & ~(page - 1), end = high & ~(page - 1);
    if (end <= start || madvise((void *)start, end - start, MADV_DONTNEED) != 0) return 0;
    return (long)(end - start);
}
