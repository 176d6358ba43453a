#ifndef BLEADVD_CDBUS_BENCH_LOOP_H
#define BLEADVD_CDBUS_BENCH_LOOP_H

/// The bench's responder: a thread with its own connection to the bus at `address`, owning
/// `bench.server` and answering `bench.Server.Ping()` and `bench.Server.Take(a{sv})` with an
/// empty reply. Returns 0 once the name is owned, -1 on failure.
int cbench_start_server(const char *address);

/// The same call loop as the Swift side, written directly against libdbus: `calls` blocking
/// calls of Ping (with_dictionary == 0) or Take with a 20-entry a{sv}, each latency in
/// microseconds written to `latencies_us`. Returns 0, or -1 on the first failed call.
int cbench_client_loop(const char *address, int calls, int with_dictionary, double *latencies_us);

#endif
