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

int bleadvd_transparent_huge_pages_disabled(void) {
    return disabled;
}
