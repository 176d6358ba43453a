#include <malloc.h>
#include <sys/prctl.h>
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
