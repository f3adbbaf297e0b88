import CSystemd
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A method call as the service sees it.
struct DBusCall {
    var path: String
    var interface: String
    var member: String
    var sender: String
    var signature: String
    var arguments: [DBusValue]
}

/// An error reply: a D-Bus error name and a one-line message (never a
/// secret).
struct DBusErrorReply: Error {
    var name: String
    var message: String

    static func invalidArgs(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.DBus.Error.InvalidArgs", message: m) }
    static func noSuchObject(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.Secret.Error.NoSuchObject", message: m) }
    static func noSession(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.Secret.Error.NoSession", message: m) }
    static func isLocked(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.Secret.Error.IsLocked", message: m) }
    static func notSupported(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.DBus.Error.NotSupported", message: m) }
    static func unknownMethod(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.DBus.Error.UnknownMethod", message: m) }
    static func accessDenied(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.DBus.Error.AccessDenied", message: m) }
    static func failed(_ m: String) -> DBusErrorReply { .init(name: "org.freedesktop.DBus.Error.Failed", message: m) }
}

/// Who sent a message: from the bus daemon's record of the connection
/// (SO_PEERCRED at connect time), through sd-bus.
struct Peer: Equatable {
    var pid: pid_t?
    var uid: uid_t?
    var executable: String?

    /// A short name for logs: the executable's path, else `pid N`.
    var program: String { executable ?? pid.map { "pid \($0)" } ?? "unknown program" }
}

/// sd-bus's flag values (sd-bus.h declares them in anonymous enums).
enum Flags {
    static let replaceExisting: UInt64 = 1 << 0
    static let allowReplacement: UInt64 = 1 << 1
    static let credsPID: UInt64 = 1 << 0
    static let credsUID: UInt64 = 1 << 3
    static let credsEUID: UInt64 = 1 << 4
    static let credsAugment: UInt64 = 1 << 63
}

/// The user's session bus, through sd-bus.
final class SessionBus {
    let bus: OpaquePointer
    private var slots: [OpaquePointer?] = []

    init() throws(SDBusFailure) {
        guard csystemd_available() != 0 else { throw SDBusFailure(call: "loading libsystemd.so.0 (Debian: libsystemd0)", code: ENOENT) }
        var b: OpaquePointer?
        try check(sd_bus_open_user(&b), "sd_bus_open_user")
        guard let b else { throw SDBusFailure(call: "sd_bus_open_user", code: ENOTCONN) }
        bus = b
    }

    deinit {
        for s in slots { sd_bus_slot_unref(s) }
        sd_bus_flush_close_unref(bus)
    }

    /// Asks for `name`: replacing its owner if `replace`, and letting a
    /// later `--replace` take it. -EEXIST when another connection holds it.
    func requestName(_ name: String, replace: Bool) throws(SDBusFailure) {
        var flags: UInt64 = Flags.allowReplacement
        if replace { flags |= Flags.replaceExisting }
        try check(sd_bus_request_name(bus, name, flags), "sd_bus_request_name")
    }

    /// The process that owns `name` now, as the bus daemon knows it.
    func owner(of name: String) -> Peer? {
        var creds: OpaquePointer?
        let mask = Flags.credsPID | Flags.credsUID | Flags.credsAugment
        guard sd_bus_get_name_creds(bus, name, mask, &creds) >= 0, let creds else { return nil }
        defer { sd_bus_creds_unref(creds) }
        return Self.peer(creds)
    }

    /// The sender of `m`, from the bus daemon (GetConnectionCredentials:
    /// the peer credentials it took when the sender connected).
    func sender(of m: OpaquePointer) -> Peer? {
        var creds: OpaquePointer?
        let mask = Flags.credsPID | Flags.credsUID | Flags.credsEUID | Flags.credsAugment
        guard sd_bus_query_sender_creds(m, mask, &creds) >= 0, let creds else { return nil }
        defer { sd_bus_creds_unref(creds) }
        return Self.peer(creds)
    }

    private static func peer(_ creds: OpaquePointer) -> Peer {
        var p = Peer()
        var pid: pid_t = 0
        if sd_bus_creds_get_pid(creds, &pid) >= 0 { p.pid = pid }
        var uid: uid_t = 0
        if sd_bus_creds_get_euid(creds, &uid) >= 0 || sd_bus_creds_get_uid(creds, &uid) >= 0 { p.uid = uid }
        if let pid = p.pid { p.executable = Self.executable(of: pid) }
        return p
    }

    /// /proc/PID/exe, or nil when it cannot be read (another user's
    /// process, or one that ended).
    static func executable(of pid: pid_t) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return buffer.withUnsafeBufferPointer { String(decoding: $0.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self) }
    }

    /// Calls `handler` for every message to `prefix` and the paths under it.
    func addFallback(_ prefix: String, _ handler: sd_bus_message_handler_t, userdata: UnsafeMutableRawPointer) throws(SDBusFailure) {
        var slot: OpaquePointer?
        try check(sd_bus_add_fallback(bus, &slot, prefix, handler, userdata), "sd_bus_add_fallback")
        slots.append(slot)
    }

    /// Calls `handler` for the bus daemon's signal `member` (NameLost,
    /// NameOwnerChanged).
    func matchDaemonSignal(_ member: String, _ handler: sd_bus_message_handler_t, userdata: UnsafeMutableRawPointer) throws(SDBusFailure) {
        var slot: OpaquePointer?
        try check(
            sd_bus_match_signal(
                bus, &slot, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", member, handler, userdata),
            "sd_bus_match_signal")
        slots.append(slot)
    }

    func reply(to call: OpaquePointer, _ values: [DBusValue]) throws(SDBusFailure) {
        var r: OpaquePointer?
        try check(sd_bus_message_new_method_return(call, &r), "sd_bus_message_new_method_return")
        guard let r else { return }
        defer { sd_bus_message_unref(r) }
        try DBusWriter.append(r, values)
        try check(sd_bus_send(bus, r, nil), "sd_bus_send")
    }

    func replyError(to call: OpaquePointer, _ e: DBusErrorReply) {
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        sd_bus_error_set(&error, e.name, e.message)
        sd_bus_reply_method_error(call, &error)
        sd_bus_error_free(&error)
    }

    func emit(path: String, interface: String, member: String, _ values: [DBusValue]) {
        var m: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &m, path, interface, member) >= 0, let m else { return }
        defer { sd_bus_message_unref(m) }
        guard (try? DBusWriter.append(m, values)) != nil else { return }
        sd_bus_send(bus, m, nil)
    }

    /// Processes messages until `stop()` returns true; waits on the bus
    /// between them (at most `tick` seconds, so `stop` is asked regularly).
    func run(tick: Double = 1, afterEach: () -> Void, until stop: () -> Bool) throws(SDBusFailure) {
        while !stop() {
            let r = try check(sd_bus_process(bus, nil), "sd_bus_process")
            afterEach()
            if r > 0 { continue }
            let w = sd_bus_wait(bus, UInt64(tick * 1_000_000))
            if w < 0 && w != -EINTR { throw SDBusFailure(call: "sd_bus_wait", code: -w) }
        }
    }

    /// Sends what is queued (a reply, before a long prompt).
    func flush() { sd_bus_flush(bus) }

    static func call(from m: OpaquePointer) -> DBusCall {
        func s(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "" }
        return DBusCall(
            path: s(sd_bus_message_get_path(m)), interface: s(sd_bus_message_get_interface(m)), member: s(sd_bus_message_get_member(m)),
            sender: s(sd_bus_message_get_sender(m)), signature: s(sd_bus_message_get_signature(m, 1)), arguments: [])
    }
}
