#include "CDBusBenchLoop.h"

#include <dbus/dbus.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static DBusHandlerResult answer(DBusConnection *connection, DBusMessage *message, void *data) {
    (void)data;
    if (dbus_message_is_method_call(message, "bench.Server", "Ping") ||
        dbus_message_is_method_call(message, "bench.Server", "Take")) {
        DBusMessage *reply = dbus_message_new_method_return(message);
        dbus_connection_send(connection, reply, NULL);
        dbus_message_unref(reply);
        return DBUS_HANDLER_RESULT_HANDLED;
    }
    return DBUS_HANDLER_RESULT_NOT_YET_HANDLED;
}

static void *serve(void *data) {
    DBusConnection *connection = data;
    while (dbus_connection_read_write_dispatch(connection, -1)) {
    }
    return NULL;
}

static DBusConnection *connect_to(const char *address) {
    DBusError error;
    dbus_error_init(&error);
    DBusConnection *connection = dbus_connection_open_private(address, &error);
    if (connection == NULL || !dbus_bus_register(connection, &error)) {
        fprintf(stderr, "cbench: %s\n", error.message ? error.message : "cannot connect");
        dbus_error_free(&error);
        return NULL;
    }
    return connection;
}

int cbench_start_server(const char *address) {
    DBusConnection *connection = connect_to(address);
    if (connection == NULL) return -1;
    DBusError error;
    dbus_error_init(&error);
    int owned = dbus_bus_request_name(connection, "bench.server", DBUS_NAME_FLAG_DO_NOT_QUEUE, &error);
    if (owned != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER) {
        fprintf(stderr, "cbench: cannot own bench.server\n");
        dbus_error_free(&error);
        return -1;
    }
    dbus_connection_add_filter(connection, answer, NULL, NULL);
    pthread_t thread;
    return pthread_create(&thread, NULL, serve, connection) == 0 ? 0 : -1;
}

static void append_dictionary(DBusMessage *message) {
    DBusMessageIter iter, dict, entry, variant;
    dbus_message_iter_init_append(message, &iter);
    dbus_message_iter_open_container(&iter, DBUS_TYPE_ARRAY, "{sv}", &dict);
    for (int i = 0; i < 20; i++) {
        char key[16];
        snprintf(key, sizeof key, "key%02d", i);
        const char *key_pointer = key;
        dbus_uint32_t value = (dbus_uint32_t)i;
        dbus_message_iter_open_container(&dict, DBUS_TYPE_DICT_ENTRY, NULL, &entry);
        dbus_message_iter_append_basic(&entry, DBUS_TYPE_STRING, &key_pointer);
        dbus_message_iter_open_container(&entry, DBUS_TYPE_VARIANT, "u", &variant);
        dbus_message_iter_append_basic(&variant, DBUS_TYPE_UINT32, &value);
        dbus_message_iter_close_container(&entry, &variant);
        dbus_message_iter_close_container(&dict, &entry);
    }
    dbus_message_iter_close_container(&iter, &dict);
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int cbench_client_loop(const char *address, int calls, int with_dictionary, double *latencies_us) {
    DBusConnection *connection = connect_to(address);
    if (connection == NULL) return -1;
    int result = 0;
    for (int i = 0; i < calls; i++) {
        double start = now_us();
        DBusMessage *call = dbus_message_new_method_call(
            "bench.server", "/bench", "bench.Server", with_dictionary ? "Take" : "Ping");
        if (with_dictionary) append_dictionary(call);
        DBusError error;
        dbus_error_init(&error);
        DBusMessage *reply = dbus_connection_send_with_reply_and_block(connection, call, 5000, &error);
        dbus_message_unref(call);
        if (reply == NULL) {
            fprintf(stderr, "cbench: call failed: %s\n", error.message);
            dbus_error_free(&error);
            result = -1;
            break;
        }
        dbus_message_unref(reply);
        latencies_us[i] = now_us() - start;
    }
    dbus_connection_close(connection);
    dbus_connection_unref(connection);
    return result;
}
