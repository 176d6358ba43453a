#include "CEvents.h"
#include <sys/prctl.h>

int bleadvd_epoll_ctl(int epoll, int operation, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event = { .events = events, .data.u64 = data };
    return epoll_ctl(epoll, operation, fd, &event);
}

int bleadvd_epoll_wait(int epoll, uint64_t *data, uint32_t *events, int capacity, int timeout) {
    struct epoll_event ready[32];
    if (capacity > 32) capacity = 32;
    int count = epoll_wait(epoll, ready, capacity, timeout);
    for (int i = 0; i < count; i++) {
        data[i] = ready[i].data.u64;
        events[i] = ready[i].events;
    }
    return count;
}

void bleadvd_name_thread(const char *name) {
    prctl(PR_SET_NAME, name, 0, 0, 0);
}
