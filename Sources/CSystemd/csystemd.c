// sd-bus (libsystemd), loaded when `coffer secret-service` first calls it
// instead of linked: every other command starts without mapping
// libsystemd and what it pulls in (libgcrypt, liblzma, libzstd, liblz4,
// libcap), and the release binary keeps its short list of shared
// libraries (scripts/release-check.sh). Each function of sd-bus.h that
// Sources/CofferSecretService calls is defined here with sd-bus's own name
// and forwards to libsystemd.so.0's, found with dlsym. Without libsystemd
// they fail with -ENOSYS (csystemd_available() says so first).
#include "csystemd.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

static void *library;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) { library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL); }

int csystemd_available(void) {
    pthread_once(&once, load);
    return library != NULL;
}

static int resolve(const char *name, void **slot) {
    if (*slot) return 1;
    if (!csystemd_available()) return 0;
    *slot = dlsym(library, name);
    return *slot != NULL;
}

static int (*p_sd_bus_add_fallback)(sd_bus *bus, sd_bus_slot **slot, const char *prefix, sd_bus_message_handler_t callback, void *userdata);
int sd_bus_add_fallback(sd_bus *bus, sd_bus_slot **slot, const char *prefix, sd_bus_message_handler_t callback, void *userdata) {
    if (!resolve("sd_bus_add_fallback", (void **)&p_sd_bus_add_fallback)) return -ENOSYS;
    return p_sd_bus_add_fallback(bus, slot, prefix, callback, userdata);
}

static int (*p_sd_bus_creds_get_euid)(sd_bus_creds *c, uid_t *euid);
int sd_bus_creds_get_euid(sd_bus_creds *c, uid_t *euid) {
    if (!resolve("sd_bus_creds_get_euid", (void **)&p_sd_bus_creds_get_euid)) return -ENOSYS;
    return p_sd_bus_creds_get_euid(c, euid);
}

static int (*p_sd_bus_creds_get_pid)(sd_bus_creds *c, pid_t *pid);
int sd_bus_creds_get_pid(sd_bus_creds *c, pid_t *pid) {
    if (!resolve("sd_bus_creds_get_pid", (void **)&p_sd_bus_creds_get_pid)) return -ENOSYS;
    return p_sd_bus_creds_get_pid(c, pid);
}

static int (*p_sd_bus_creds_get_uid)(sd_bus_creds *c, uid_t *uid);
int sd_bus_creds_get_uid(sd_bus_creds *c, uid_t *uid) {
    if (!resolve("sd_bus_creds_get_uid", (void **)&p_sd_bus_creds_get_uid)) return -ENOSYS;
    return p_sd_bus_creds_get_uid(c, uid);
}

static sd_bus_creds* (*p_sd_bus_creds_unref)(sd_bus_creds *c);
sd_bus_creds* sd_bus_creds_unref(sd_bus_creds *c) {
    if (!resolve("sd_bus_creds_unref", (void **)&p_sd_bus_creds_unref)) return NULL;
    return p_sd_bus_creds_unref(c);
}

static void (*p_sd_bus_error_free)(sd_bus_error *e);
void sd_bus_error_free(sd_bus_error *e) {
    if (resolve("sd_bus_error_free", (void **)&p_sd_bus_error_free)) p_sd_bus_error_free(e);
}

static int (*p_sd_bus_error_set)(sd_bus_error *e, const char *name, const char *message);
int sd_bus_error_set(sd_bus_error *e, const char *name, const char *message) {
    if (!resolve("sd_bus_error_set", (void **)&p_sd_bus_error_set)) return -ENOSYS;
    return p_sd_bus_error_set(e, name, message);
}

static sd_bus* (*p_sd_bus_flush_close_unref)(sd_bus *bus);
sd_bus* sd_bus_flush_close_unref(sd_bus *bus) {
    if (!resolve("sd_bus_flush_close_unref", (void **)&p_sd_bus_flush_close_unref)) return NULL;
    return p_sd_bus_flush_close_unref(bus);
}

static int (*p_sd_bus_get_name_creds)(sd_bus *bus, const char *name, uint64_t mask, sd_bus_creds **creds);
int sd_bus_get_name_creds(sd_bus *bus, const char *name, uint64_t mask, sd_bus_creds **creds) {
    if (!resolve("sd_bus_get_name_creds", (void **)&p_sd_bus_get_name_creds)) return -ENOSYS;
    return p_sd_bus_get_name_creds(bus, name, mask, creds);
}

static int (*p_sd_bus_match_signal)(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path, const char *interface, const char *member, sd_bus_message_handler_t callback, void *userdata);
int sd_bus_match_signal(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path, const char *interface, const char *member, sd_bus_message_handler_t callback, void *userdata) {
    if (!resolve("sd_bus_match_signal", (void **)&p_sd_bus_match_signal)) return -ENOSYS;
    return p_sd_bus_match_signal(bus, ret, sender, path, interface, member, callback, userdata);
}

static int (*p_sd_bus_message_append_array)(sd_bus_message *m, char type, const void *ptr, size_t size);
int sd_bus_message_append_array(sd_bus_message *m, char type, const void *ptr, size_t size) {
    if (!resolve("sd_bus_message_append_array", (void **)&p_sd_bus_message_append_array)) return -ENOSYS;
    return p_sd_bus_message_append_array(m, type, ptr, size);
}

static int (*p_sd_bus_message_append_basic)(sd_bus_message *m, char type, const void *p);
int sd_bus_message_append_basic(sd_bus_message *m, char type, const void *p) {
    if (!resolve("sd_bus_message_append_basic", (void **)&p_sd_bus_message_append_basic)) return -ENOSYS;
    return p_sd_bus_message_append_basic(m, type, p);
}

static int (*p_sd_bus_message_close_container)(sd_bus_message *m);
int sd_bus_message_close_container(sd_bus_message *m) {
    if (!resolve("sd_bus_message_close_container", (void **)&p_sd_bus_message_close_container)) return -ENOSYS;
    return p_sd_bus_message_close_container(m);
}

static int (*p_sd_bus_message_enter_container)(sd_bus_message *m, char type, const char *contents);
int sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents) {
    if (!resolve("sd_bus_message_enter_container", (void **)&p_sd_bus_message_enter_container)) return -ENOSYS;
    return p_sd_bus_message_enter_container(m, type, contents);
}

static int (*p_sd_bus_message_exit_container)(sd_bus_message *m);
int sd_bus_message_exit_container(sd_bus_message *m) {
    if (!resolve("sd_bus_message_exit_container", (void **)&p_sd_bus_message_exit_container)) return -ENOSYS;
    return p_sd_bus_message_exit_container(m);
}

static const char* (*p_sd_bus_message_get_interface)(sd_bus_message *m);
const char* sd_bus_message_get_interface(sd_bus_message *m) {
    if (!resolve("sd_bus_message_get_interface", (void **)&p_sd_bus_message_get_interface)) return NULL;
    return p_sd_bus_message_get_interface(m);
}

static const char* (*p_sd_bus_message_get_member)(sd_bus_message *m);
const char* sd_bus_message_get_member(sd_bus_message *m) {
    if (!resolve("sd_bus_message_get_member", (void **)&p_sd_bus_message_get_member)) return NULL;
    return p_sd_bus_message_get_member(m);
}

static const char* (*p_sd_bus_message_get_path)(sd_bus_message *m);
const char* sd_bus_message_get_path(sd_bus_message *m) {
    if (!resolve("sd_bus_message_get_path", (void **)&p_sd_bus_message_get_path)) return NULL;
    return p_sd_bus_message_get_path(m);
}

static const char* (*p_sd_bus_message_get_sender)(sd_bus_message *m);
const char* sd_bus_message_get_sender(sd_bus_message *m) {
    if (!resolve("sd_bus_message_get_sender", (void **)&p_sd_bus_message_get_sender)) return NULL;
    return p_sd_bus_message_get_sender(m);
}

static const char* (*p_sd_bus_message_get_signature)(sd_bus_message *m, int complete);
const char* sd_bus_message_get_signature(sd_bus_message *m, int complete) {
    if (!resolve("sd_bus_message_get_signature", (void **)&p_sd_bus_message_get_signature)) return NULL;
    return p_sd_bus_message_get_signature(m, complete);
}

static int (*p_sd_bus_message_new_method_return)(sd_bus_message *call, sd_bus_message **m);
int sd_bus_message_new_method_return(sd_bus_message *call, sd_bus_message **m) {
    if (!resolve("sd_bus_message_new_method_return", (void **)&p_sd_bus_message_new_method_return)) return -ENOSYS;
    return p_sd_bus_message_new_method_return(call, m);
}

static int (*p_sd_bus_message_new_signal)(sd_bus *bus, sd_bus_message **m, const char *path, const char *interface, const char *member);
int sd_bus_message_new_signal(sd_bus *bus, sd_bus_message **m, const char *path, const char *interface, const char *member) {
    if (!resolve("sd_bus_message_new_signal", (void **)&p_sd_bus_message_new_signal)) return -ENOSYS;
    return p_sd_bus_message_new_signal(bus, m, path, interface, member);
}

static int (*p_sd_bus_message_open_container)(sd_bus_message *m, char type, const char *contents);
int sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents) {
    if (!resolve("sd_bus_message_open_container", (void **)&p_sd_bus_message_open_container)) return -ENOSYS;
    return p_sd_bus_message_open_container(m, type, contents);
}

static int (*p_sd_bus_message_peek_type)(sd_bus_message *m, char *type, const char **contents);
int sd_bus_message_peek_type(sd_bus_message *m, char *type, const char **contents) {
    if (!resolve("sd_bus_message_peek_type", (void **)&p_sd_bus_message_peek_type)) return -ENOSYS;
    return p_sd_bus_message_peek_type(m, type, contents);
}

static int (*p_sd_bus_message_read_array)(sd_bus_message *m, char type, const void **ptr, size_t *size);
int sd_bus_message_read_array(sd_bus_message *m, char type, const void **ptr, size_t *size) {
    if (!resolve("sd_bus_message_read_array", (void **)&p_sd_bus_message_read_array)) return -ENOSYS;
    return p_sd_bus_message_read_array(m, type, ptr, size);
}

static int (*p_sd_bus_message_read_basic)(sd_bus_message *m, char type, void *p);
int sd_bus_message_read_basic(sd_bus_message *m, char type, void *p) {
    if (!resolve("sd_bus_message_read_basic", (void **)&p_sd_bus_message_read_basic)) return -ENOSYS;
    return p_sd_bus_message_read_basic(m, type, p);
}

static sd_bus_message* (*p_sd_bus_message_unref)(sd_bus_message *m);
sd_bus_message* sd_bus_message_unref(sd_bus_message *m) {
    if (!resolve("sd_bus_message_unref", (void **)&p_sd_bus_message_unref)) return NULL;
    return p_sd_bus_message_unref(m);
}

static int (*p_sd_bus_open_user)(sd_bus **ret);
int sd_bus_open_user(sd_bus **ret) {
    if (!resolve("sd_bus_open_user", (void **)&p_sd_bus_open_user)) return -ENOSYS;
    return p_sd_bus_open_user(ret);
}

static int (*p_sd_bus_process)(sd_bus *bus, sd_bus_message **r);
int sd_bus_process(sd_bus *bus, sd_bus_message **r) {
    if (!resolve("sd_bus_process", (void **)&p_sd_bus_process)) return -ENOSYS;
    return p_sd_bus_process(bus, r);
}

static int (*p_sd_bus_query_sender_creds)(sd_bus_message *m, uint64_t mask, sd_bus_creds **creds);
int sd_bus_query_sender_creds(sd_bus_message *m, uint64_t mask, sd_bus_creds **creds) {
    if (!resolve("sd_bus_query_sender_creds", (void **)&p_sd_bus_query_sender_creds)) return -ENOSYS;
    return p_sd_bus_query_sender_creds(m, mask, creds);
}

static int (*p_sd_bus_reply_method_error)(sd_bus_message *call, const sd_bus_error *e);
int sd_bus_reply_method_error(sd_bus_message *call, const sd_bus_error *e) {
    if (!resolve("sd_bus_reply_method_error", (void **)&p_sd_bus_reply_method_error)) return -ENOSYS;
    return p_sd_bus_reply_method_error(call, e);
}

static int (*p_sd_bus_request_name)(sd_bus *bus, const char *name, uint64_t flags);
int sd_bus_request_name(sd_bus *bus, const char *name, uint64_t flags) {
    if (!resolve("sd_bus_request_name", (void **)&p_sd_bus_request_name)) return -ENOSYS;
    return p_sd_bus_request_name(bus, name, flags);
}

static int (*p_sd_bus_send)(sd_bus *bus, sd_bus_message *m, uint64_t *cookie);
int sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie) {
    if (!resolve("sd_bus_send", (void **)&p_sd_bus_send)) return -ENOSYS;
    return p_sd_bus_send(bus, m, cookie);
}

static sd_bus_slot* (*p_sd_bus_slot_unref)(sd_bus_slot *slot);
sd_bus_slot* sd_bus_slot_unref(sd_bus_slot *slot) {
    if (!resolve("sd_bus_slot_unref", (void **)&p_sd_bus_slot_unref)) return NULL;
    return p_sd_bus_slot_unref(slot);
}

static int (*p_sd_bus_wait)(sd_bus *bus, uint64_t timeout_usec);
int sd_bus_wait(sd_bus *bus, uint64_t timeout_usec) {
    if (!resolve("sd_bus_wait", (void **)&p_sd_bus_wait)) return -ENOSYS;
    return p_sd_bus_wait(bus, timeout_usec);
}

static int (*p_sd_bus_flush)(sd_bus *bus);
int sd_bus_flush(sd_bus *bus) {
    if (!resolve("sd_bus_flush", (void **)&p_sd_bus_flush)) return -ENOSYS;
    return p_sd_bus_flush(bus);
}
