#ifndef BLEADVD_CLINUX_H
#define BLEADVD_CLINUX_H
/* Process set-up bleadvd needs before Swift starts a thread (see startup.c). */

/* Whether the start-up call to prctl(PR_SET_THP_DISABLE) succeeded (1) or not (0). */
int bleadvd_transparent_huge_pages_disabled(void);
/* Drops the pages of the dynamic loader's tables in bleadvd's own file (symbols, names,
   hashes, versions, relocations), read at start and hardly ever after. Returns the bytes
   dropped, 0 when nothing was. */
long bleadvd_release_loader_tables(void);
/* Makes bleadvd its descendants' subreaper (prctl PR_SET_CHILD_SUBREAPER): what a program it
   runs leaves behind when the process between them exits is re-parented to bleadvd, not to
   init, where bleadvd can find it, kill it and reap it. Returns 1 when prctl succeeded. */
int bleadvd_adopt_orphans(void);
#endif
