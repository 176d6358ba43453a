#ifndef BLEADVD_CDBUS_SHIM_H
#define BLEADVD_CDBUS_SHIM_H
#include <dbus/dbus.h>
#endif
