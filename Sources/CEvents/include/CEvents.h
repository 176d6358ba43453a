#ifndef BLEADVD_CEVENTS_H
#define BLEADVD_CEVENTS_H
/* The Linux event interfaces DBus's EventLoop is built on (Glibc's Swift module has none of
   them): epoll, eventfd, timerfd and signalfd. epoll_event is packed on x86_64 and not on
   arm64, so it is filled and read here, in C, never laid out by Swift. */
#include <stdint.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>

/* epoll_ctl with the event's mask and 64 bits of user data. */
int bleadvd_epoll_ctl(int epoll, int operation, int fd, uint32_t events, uint64_t data);

/* epoll_wait into two arrays of at most `capacity` entries: each ready fd's user data and its
   events. Returns what epoll_wait returns. */
int bleadvd_epoll_wait(int epoll, uint64_t *data, uint32_t *events, int capacity, int timeout);

/* Names the calling thread (the kernel keeps 15 bytes), as ps and /proc show it. */
void bleadvd_name_thread(const char *name);
#endif
