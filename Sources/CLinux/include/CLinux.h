#ifndef BLEADVD_CLINUX_H
#define BLEADVD_CLINUX_H
/* Process set-up bleadvd needs before Swift starts a thread (see startup.c). */

/* Whether the start-up call to prctl(PR_SET_THP_DISABLE) succeeded (1) or not (0). */
int bleadvd_transparent_huge_pages_disabled(void);
/* Drops the pages that bleadvd's own file and its shared libraries map read-only (code,
   read-only data, the loader's tables): what start-up brought in, and the neighbours the kernel
   mapped with it. What runs next reads its pages back. Returns the bytes dropped, 0 when
   nothing was. */
long bleadvd_release_read_only_pages(void);
/* Makes bleadvd its descendants' subreaper (prctl PR_SET_CHILD_SUBREAPER): what a program it
   runs leaves behind when the process between them exits is re-parented to bleadvd, not to
   init, where bleadvd can find it, kill it and reap it. Returns 1 when prctl succeeded. */
int bleadvd_adopt_orphans(void);
#endif
