#ifndef BLEADVD_CLINUX_H
#define BLEADVD_CLINUX_H
/* Process set-up bleadvd needs before Swift starts a thread (see startup.c). */

/* Whether the start-up call to prctl(PR_SET_THP_DISABLE) succeeded (1) or not (0). */
int bleadvd_transparent_huge_pages_disabled(void);
#endif
