import CofferTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `coffer secret-service` with the real clients, each run on a private
/// session bus (`dbus-run-session`): libsecret's `secret-tool`, Debian's
/// python3-secretstorage (both session algorithms) and python3-keyring's
/// SecretService backend. Every run is bounded in time.
@Suite(
    "Secret Service with real clients",
    .enabled(if: ProcessInfo.processInfo.environment["COFFER_INTEROP"] == "1"))
struct SecretServiceInteropTests {
    /// A vault with a shell session, and a way to run a script on a fresh
    /// session bus with the service started on it.
    final class Fixture: @unchecked Sendable {
        let home = TestHome()
        var env: [String: String] = [:]

        init() throws {
            home.initVault()
            let unlock = home.unlocked(["unlock", "--shell", "sh"])
            env = home.environment
            env["COFFER_SESSION"] = try SessionTests.token(fromShellLine: unlock.out)
            env["COFFER"] = CofferBinary.path
            env["WORK"] = home.root.path
        }

        /// Runs `body` (bash) under dbus-run-session after starting the
        /// service (its stderr in $WORK/service.log) and waiting for its
        /// name; stops the service afterwards and prints its exit status.
        /// `busConfig`: a dbus-daemon configuration file for the bus
        /// (dbus-run-session's default session configuration when nil).
        func onBus(_ body: String, service: String = "\"$COFFER\" secret-service --log", busConfig: String? = nil, timeout: Double = 60) -> TimedResult {
            let script = """
                set -u
                \(service) 2>"$WORK/service.log" &
                svc=$!
                for i in $(seq 1 200); do
                  dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
                    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true' && break
                  sleep 0.05
                done
                \(body)
                kill -TERM $svc 2>/dev/null
                wait $svc
                echo "service-exit=$?"
                """
            let file = home.path("script-\(UUID().uuidString.prefix(8)).sh")
            FileManager.default.createFile(atPath: file, contents: Data(script.utf8))
            // SIGTERM unblocked first: the test runner may hand its children
            // a mask that blocks it, and dbus-run-session ends its bus with it.
            let unblock =
                "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT}); os.execvp(sys.argv[1], sys.argv[1:])"
            let config = busConfig.map { ["--config-file=" + $0] } ?? []
            return Spawn.timed(
                "/usr/bin/python3", ["-c", unblock, "dbus-run-session"] + config + ["--", "bash", file], environment: env, workDir: home.root.path,
                timeout: timeout)
        }

        var serviceLog: String { (try? String(contentsOfFile: home.path("service.log"), encoding: .utf8)) ?? "" }

        func coffer(_ args: [String]) -> CLIResult { home.run(args, env: ["COFFER_SESSION": env["COFFER_SESSION"] ?? ""]) }
    }

    @Test func secretToolStoresLooksUpSearchesAndClears() throws {
        let f = try Fixture()
        let r = f.onBus(
            """
            printf 's3cret-token' | secret-tool store --label='GitHub token' service github user alice || echo store-failed
            echo "lookup=$(secret-tool lookup service github user alice)"
            secret-tool search --all service github 2>&1 | grep -E '^(label|attribute.user) ' | sort
            """)
        #expect(!r.timedOut, "\(r)")
        #expect(r.text.contains("lookup=s3cret-token"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("label = GitHub token"), "\(r)")
        #expect(r.text.contains("attribute.user = alice"), "\(r)")
        #expect(!r.text.contains("store-failed"), "\(r)")
        #expect(r.text.contains("service-exit=0"), "\(r)\n\(f.serviceLog)")

        // The item is an ordinary vault item under apps/.
        let ls = f.coffer(["ls", "apps/"])
        let name = try #require(ls.out.split(separator: "\n").map { String($0.split(separator: " ")[0]) }.first { $0.hasPrefix("apps/github-token-") }, "\(ls)")
        #expect(f.coffer(["get", name]).out == "s3cret-token")
        #expect(f.coffer(["get", name, "--field", "attributes"]).out == #"{"service":"github","user":"alice"}"#)
        // --log names the program and the item, never the secret.
        #expect(f.serviceLog.contains("created \(name)"), "\(f.serviceLog)")
        #expect(f.serviceLog.contains("secret-tool read \(name)"), "\(f.serviceLog)")
        #expect(!f.serviceLog.contains("s3cret-token"))
        // libsecret asks for the encrypted session first, and gets it.
        #expect(f.serviceLog.contains("secret-tool opened a dh-ietf1024-sha256-aes128-cbc-pkcs7 session"), "\(f.serviceLog)")

        // An edit made with coffer while the service runs (after it has read
        // the item) is what the next lookup returns; clear deletes.
        let r2 = f.onBus(
            """
            echo "warm=$(secret-tool lookup service github user alice)"
            "$COFFER" edit \(name) --field secret=rotated-token 2>/dev/null || echo edit-failed
            echo "lookup=$(secret-tool lookup service github user alice)"
            secret-tool clear service github user alice
            echo "after=$(secret-tool lookup service github user alice)"
            """)
        #expect(r2.text.contains("warm=s3cret-token"), "\(r2)")
        #expect(!r2.text.contains("edit-failed"), "\(r2)")
        #expect(r2.text.contains("lookup=rotated-token"), "\(r2)\n\(f.serviceLog)")
        #expect(r2.text.contains("after=\n") || r2.text.contains("after=\r\n") || r2.text.hasSuffix("after="), "\(r2)")
        #expect(f.coffer(["get", name]).status == 66)
    }

    @Test func aTakenNameIsExit75NamingTheHolderUnlessReplace() throws {
        let f = try Fixture()
        let r = f.onBus(
            """
            "$COFFER" secret-service 2>"$WORK/second.log"
            echo "second-exit=$?"
            "$COFFER" secret-service --replace 2>"$WORK/third.log" &
            third=$!
            sleep 1
            printf 'v' | secret-tool store --label=x k v
            echo "lookup=$(secret-tool lookup k v)"
            kill -TERM $third; wait $third
            echo "third-exit=$?"
            """)
        let second = (try? String(contentsOfFile: f.home.path("second.log"), encoding: .utf8)) ?? ""
        #expect(r.text.contains("second-exit=75"), "\(r)")
        #expect(second.contains("coffer: error: org.freedesktop.secrets is owned by process "), "\(second)")
        #expect(second.contains("/coffer)"), "\(second)")
        #expect(second.contains("coffer: hint: "), "\(second)")
        #expect(r.text.contains("lookup=v"), "\(r)")
        #expect(r.text.contains("third-exit=0"), "\(r)")
        // The first service gave the name up and ended by itself.
        #expect(f.serviceLog.contains("another Secret Service took the name"), "\(f.serviceLog)")
    }

    static let secretStorageScript = #"""
        import sys, secretstorage
        from secretstorage import dhcrypto
        algorithm = sys.argv[1]
        conn = secretstorage.dbus_init()
        if algorithm == "plain":
            # secretstorage always tries the encrypted session first; make it fall back.
            secretstorage.util.open_session_orig = secretstorage.util.open_session
            def plain_session(connection):
                session = dhcrypto.Session()
                output, result = secretstorage.util.DBusAddressWrapper(
                    secretstorage.util.SS_PATH, secretstorage.util.SERVICE_IFACE, connection
                ).call('OpenSession', 'sv', 'plain', ('s', ''))
                session.encrypted = False
                session.object_path = result
                return session
            secretstorage.util.open_session = plain_session
            secretstorage.collection.open_session = plain_session
            secretstorage.item.open_session = plain_session
        col = secretstorage.get_default_collection(conn)
        print("default-locked", col.is_locked())
        item = col.create_item("Mail " + algorithm, {"app": "mail", "alg": algorithm}, b"pw-" + algorithm.encode(), replace=True)
        found = list(secretstorage.search_items(conn, {"app": "mail", "alg": algorithm}))
        print("found", len(found), found[0].get_label())
        print("secret", found[0].get_secret().decode())
        found[0].set_secret(b"changed-" + algorithm.encode())
        print("changed", found[0].get_secret().decode())
        again = col.create_item("Mail again", {"app": "mail", "alg": algorithm}, b"replaced", replace=True)
        print("after-replace", len(list(col.search_items({"app": "mail", "alg": algorithm}))), again.get_secret().decode())
        print("attributes", sorted(again.get_attributes().items()))
        again.delete()
        print("after-delete", len(list(col.search_items({"app": "mail", "alg": algorithm}))))
        """#

    @Test(arguments: ["dh-ietf1024-sha256-aes128-cbc-pkcs7", "plain"])
    func pythonSecretStorage(algorithm: String) throws {
        let f = try Fixture()
        FileManager.default.createFile(atPath: f.home.path("ss.py"), contents: Data(Self.secretStorageScript.utf8))
        let r = f.onBus("/usr/bin/python3 \"$WORK/ss.py\" \(algorithm) 2>&1")
        #expect(r.text.contains("default-locked False"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("found 1 Mail \(algorithm)"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("secret pw-\(algorithm)"), "\(r)")
        #expect(r.text.contains("changed changed-\(algorithm)"), "\(r)")
        #expect(r.text.contains("after-replace 1 replaced"), "\(r)")
        #expect(r.text.contains("attributes [('alg', '\(algorithm)'), ('app', 'mail')]"), "\(r)")
        #expect(r.text.contains("after-delete 0"), "\(r)")
        #expect(f.serviceLog.contains("opened a \(algorithm) session"), "\(f.serviceLog)")
        #expect(!r.timedOut && r.text.contains("service-exit=0"), "\(r)")
    }

    @Test func pythonKeyringSecretServiceBackend() throws {
        let f = try Fixture()
        let script = """
            import keyring
            from keyring.backends import SecretService
            keyring.set_keyring(SecretService.Keyring())
            keyring.set_password("coffer-test", "bob", "hunter2")
            print("get", keyring.get_password("coffer-test", "bob"))
            keyring.delete_password("coffer-test", "bob")
            print("after", keyring.get_password("coffer-test", "bob"))
            """
        FileManager.default.createFile(atPath: f.home.path("kr.py"), contents: Data(script.utf8))
        let r = f.onBus("/usr/bin/python3 \"$WORK/kr.py\" 2>&1")
        #expect(r.text.contains("get hunter2"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("after None"), "\(r)")
        #expect(!r.timedOut && r.text.contains("service-exit=0"), "\(r)")
    }
    /// A pinentry that speaks just enough Assuan: OK to every command, the
    /// passphrase in $PIN for GETPIN (or ERR when $PIN is empty), and a
    /// line per GETPIN in $WORK/pinentry.log.
    static let pinentry = #"""
        #!/bin/sh
        echo "OK Pleased to meet you"
        while IFS= read -r line; do
          case "$line" in
            GETPIN*) echo "getpin" >> "$WORK/pinentry.log"
                     if [ -n "$PIN" ]; then printf 'D %s\nOK\n' "$PIN"; else echo "ERR 83886179 Operation cancelled"; fi ;;
            BYE*) echo "OK closing connection"; exit 0 ;;
            *) echo "OK" ;;
          esac
        done
        """#

    static let lockScript = #"""
        import sys, secretstorage
        conn = secretstorage.dbus_init()
        col = secretstorage.get_default_collection(conn)
        item = col.create_item("Locked one", {"app": "lock"}, b"behind-lock")
        col.lock()
        print("locked", col.is_locked())
        print("search-while-locked", len(list(secretstorage.search_items(conn, {"app": "lock"}))))
        dismissed = col.unlock()
        print("dismissed", dismissed, "locked", col.is_locked())
        if not col.is_locked():
            found = list(secretstorage.search_items(conn, {"app": "lock"}))
            print("secret", found[0].get_secret().decode())
        """#

    static let lockedStartScript = #"""
        import secretstorage
        from secretstorage.util import DBusAddressWrapper, exec_prompt, format_secret, open_session
        from secretstorage.defines import SS_PREFIX
        conn = secretstorage.dbus_init()
        col = secretstorage.get_default_collection(conn)
        print("locked-at-start", col.is_locked())
        session = open_session(conn)
        props = {SS_PREFIX + 'Item.Label': ('s', 'Made while locked'), SS_PREFIX + 'Item.Attributes': ('a{ss}', {'app': 'locked-start'})}
        w = DBusAddressWrapper(col.collection_path, SS_PREFIX + 'Collection', conn)
        item_path, prompt = w.call('CreateItem', 'a{sv}(oayays)b', props, format_secret(session, b'made-locked', 'text/plain'), True)
        print("prompt", prompt != '/')
        dismissed, result = exec_prompt(conn, prompt)
        print("dismissed", dismissed, "result", result)
        found = list(secretstorage.search_items(conn, {'app': 'locked-start'}))
        print("secret", found[0].get_secret().decode())
        """#

    @Test func lockAndUnlockThroughAScriptedPinentry() throws {
        let f = try Fixture()
        FileManager.default.createFile(atPath: f.home.path("pinentry"), contents: Data(Self.pinentry.utf8))
        chmod(f.home.path("pinentry"), 0o755)
        FileManager.default.createFile(atPath: f.home.path("lock.py"), contents: Data(Self.lockScript.utf8))
        f.env["COFFER_PINENTRY"] = f.home.path("pinentry")

        // The right passphrase: unlocked, the secret readable.
        f.env["PIN"] = f.home.passphrase
        let r = f.onBus("/usr/bin/python3 \"$WORK/lock.py\" 2>&1")
        #expect(r.text.contains("locked True"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("search-while-locked 0"), "\(r)")
        #expect(r.text.contains("dismissed False locked False"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("secret behind-lock"), "\(r)")
        #expect(!f.serviceLog.contains(f.home.passphrase))

        // Cancelled: the prompt completes dismissed, the service stays locked
        // and keeps serving.
        f.env["PIN"] = ""
        let r2 = f.onBus("/usr/bin/python3 \"$WORK/lock.py\" 2>&1")
        #expect(r2.text.contains("dismissed True locked True"), "\(r2)\n\(f.serviceLog)")
        #expect(r2.text.contains("service-exit=0"), "\(r2)")

        // A wrong passphrase is asked again (three times), then dismissed.
        try? FileManager.default.removeItem(atPath: f.home.path("pinentry.log"))
        f.env["PIN"] = "wrong passphrase"
        let r3 = f.onBus("/usr/bin/python3 \"$WORK/lock.py\" 2>&1")
        #expect(r3.text.contains("dismissed True locked True"), "\(r3)\n\(f.serviceLog)")
        let asked = (try? String(contentsOfFile: f.home.path("pinentry.log"), encoding: .utf8)) ?? ""
        #expect(asked.split(separator: "\n").count == 3, "\(asked)")

        // Started --locked (as the systemd unit does): a CreateItem returns a
        // prompt, which unlocks and then creates the item.
        f.env["PIN"] = f.home.passphrase
        FileManager.default.createFile(atPath: f.home.path("locked.py"), contents: Data(Self.lockedStartScript.utf8))
        let r4 = f.onBus("/usr/bin/python3 \"$WORK/locked.py\" 2>&1", service: "\"$COFFER\" secret-service --locked --log")
        #expect(r4.text.contains("locked-at-start True"), "\(r4)\n\(f.serviceLog)")
        #expect(r4.text.contains("prompt True"), "\(r4)")
        #expect(r4.text.contains("dismissed False result ('o', '/org/freedesktop/secrets/collection/default/"), "\(r4)\n\(f.serviceLog)")
        #expect(r4.text.contains("secret made-locked"), "\(r4)\n\(f.serviceLog)")
    }

    @Test func endingTheShellSessionLocksTheService() throws {
        let f = try Fixture()
        let r = f.onBus(
            """
            printf 'v1' | secret-tool store --label=s k s
            echo "before=$(secret-tool lookup k s)"
            "$COFFER" lock
            sleep 2.5
            echo "after=$(secret-tool lookup k s)"
            """)
        #expect(r.text.contains("before=v1"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("after=\n"), "\(r)\n\(f.serviceLog)")
        #expect(f.serviceLog.contains("locked: the shell session it was unlocked with ended"), "\(f.serviceLog)")
    }
    static let badInputScript = #"""
        import os, dbus
        from secretstorage.dhcrypto import Session, int_to_bytes
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives import padding
        NAME, ROOT = 'org.freedesktop.secrets', '/org/freedesktop/secrets'
        bus = dbus.SessionBus()
        S = dbus.Interface(bus.get_object(NAME, ROOT), 'org.freedesktop.Secret.Service')
        C = dbus.Interface(bus.get_object(NAME, ROOT + '/collection/default'), 'org.freedesktop.Secret.Collection')
        def err(name, f):
            try:
                f(); print(name, 'no-error')
            except dbus.exceptions.DBusException as e:
                print(name, e.get_dbus_name())
            except Exception as e:
                print(name, 'client-refused', type(e).__name__)
        def props(label, attrs):
            return {'org.freedesktop.Secret.Item.Label': label,
                    'org.freedesktop.Secret.Item.Attributes': dbus.Dictionary(attrs, signature='ss')}
        def secret(session, params, value):
            return dbus.Struct((dbus.ObjectPath(session), dbus.Array(params, signature='y'), dbus.Array(value, signature='y'), 'text/plain'))
        DH = 'dh-ietf1024-sha256-aes128-cbc-pkcs7'
        err('dh-empty-key', lambda: S.OpenSession(DH, dbus.Array(b'', signature='y')))
        err('dh-long-key', lambda: S.OpenSession(DH, dbus.Array(b'\x01' * 129, signature='y')))
        err('dh-key-one', lambda: S.OpenSession(DH, dbus.Array(b'\x01', signature='y')))
        err('dh-key-string', lambda: S.OpenSession(DH, 'not bytes'))
        err('unknown-algorithm', lambda: S.OpenSession('rot13', ''))
        out, plain = S.OpenSession('plain', '')
        item, _ = C.CreateItem(props('good', {'k': 'v'}), secret(plain, b'', b'good-secret'), False)
        I = dbus.Interface(bus.get_object(NAME, item), 'org.freedesktop.Secret.Item')
        err('unknown-session', lambda: C.CreateItem(props('x', {'k': 'x'}), secret(ROOT + '/session/s999', b'', b'x'), False))
        err('unknown-item', lambda: dbus.Interface(bus.get_object(NAME, ROOT + '/collection/default/' + '0' * 32),
            'org.freedesktop.Secret.Item').GetSecret(plain))
        err('unknown-collection', lambda: dbus.Interface(bus.get_object(NAME, ROOT + '/collection/nope'),
            'org.freedesktop.Secret.Collection').SearchItems(dbus.Dictionary({}, signature='ss')))
        err('ten-megabytes', lambda: C.CreateItem(props('big', {'k': 'big'}), secret(plain, b'', b'x' * 10_000_000), False))
        err('nul-attribute', lambda: C.CreateItem(props('nul', {'k': 'a\x00b'}), secret(plain, b'', b'x'), False))
        err('wrong-signature', lambda: bus.call_blocking(NAME, ROOT, 'org.freedesktop.Secret.Service', 'SearchItems', 's', ('not a dict',)))
        # An encrypted session, then a bad IV and bad padding.
        ds = Session()
        out, dh = S.OpenSession(DH, dbus.Array(int_to_bytes(ds.my_public_key), signature='y'))
        ds.set_server_public_key(int.from_bytes(bytes(out), 'big'))
        def seal(plaintext, iv, pad=True):
            if pad:
                p = padding.PKCS7(128).padder(); plaintext = p.update(plaintext) + p.finalize()
            e = Cipher(algorithms.AES(ds.aes_key), modes.CBC(iv)).encryptor()
            return e.update(plaintext) + e.finalize()
        iv = os.urandom(16)
        err('dh-good', lambda: C.CreateItem(props('dh', {'k': 'dh'}), secret(dh, iv, seal(b'dh-secret', iv)), False))
        err('dh-short-iv', lambda: C.CreateItem(props('iv', {'k': 'iv'}), secret(dh, iv[:8], seal(b'x', iv)), False))
        err('dh-bad-padding', lambda: C.CreateItem(props('pad', {'k': 'pad'}), secret(dh, iv, seal(b'sixteen bytes!!\x00', iv, pad=False)), False))
        err('dh-partial-block', lambda: C.CreateItem(props('blk', {'k': 'blk'}), secret(dh, iv, seal(b'x', iv)[:15]), False))
        err('plain-with-params', lambda: C.CreateItem(props('pp', {'k': 'pp'}), secret(plain, b'\x01' * 16, b'x'), False))
        # Another connection uses our session: refused.
        other = dbus.bus.BusConnection(os.environ['DBUS_SESSION_BUS_ADDRESS'])
        err('foreign-session', lambda: dbus.Interface(other.get_object(NAME, item), 'org.freedesktop.Secret.Item').GetSecret(plain))
        # A client that leaves while its call is under way.
        gone = dbus.bus.BusConnection(os.environ['DBUS_SESSION_BUS_ADDRESS'])
        out2, s2 = dbus.Interface(gone.get_object(NAME, ROOT), 'org.freedesktop.Secret.Service').OpenSession('plain', '')
        msg = dbus.lowlevel.MethodCallMessage(NAME, ROOT, 'org.freedesktop.Secret.Service', 'GetSecrets')
        msg.append(dbus.Array([item], signature='o'), dbus.ObjectPath(s2))
        gone.send_message(msg)
        gone.flush(); gone.close()
        # Still serving, and only the two good items were stored.
        print('still', bytes(I.GetSecret(plain)[2]).decode())
        print('items', len(C.SearchItems(dbus.Dictionary({}, signature='ss'))))
        """#

    @Test func badInputIsADBusErrorAndTheServiceKeepsServing() throws {
        let f = try Fixture()
        FileManager.default.createFile(atPath: f.home.path("bad.py"), contents: Data(Self.badInputScript.utf8))
        let r = f.onBus("/usr/bin/python3 \"$WORK/bad.py\" 2>&1")
        let invalid = "org.freedesktop.DBus.Error.InvalidArgs"
        for (name, expected) in [
            ("dh-empty-key", invalid), ("dh-long-key", invalid), ("dh-key-one", invalid), ("dh-key-string", invalid),
            ("unknown-algorithm", "org.freedesktop.DBus.Error.NotSupported"),
            ("unknown-session", "org.freedesktop.Secret.Error.NoSession"),
            ("unknown-item", "org.freedesktop.Secret.Error.NoSuchObject"),
            ("unknown-collection", "org.freedesktop.Secret.Error.NoSuchObject"),
            ("ten-megabytes", invalid), ("wrong-signature", invalid),
            ("dh-good", "no-error"), ("dh-short-iv", invalid), ("dh-bad-padding", invalid), ("dh-partial-block", invalid),
            ("plain-with-params", invalid), ("foreign-session", "org.freedesktop.Secret.Error.NoSession"),
        ] {
            #expect(r.text.contains("\(name) \(expected)\n"), "\(name)\n\(r)\n\(f.serviceLog)")
        }
        // A string with NUL never leaves the client (D-Bus strings cannot hold one).
        #expect(r.text.contains("nul-attribute client-refused") || r.text.contains("nul-attribute \(invalid)"), "\(r)")
        #expect(r.text.contains("still good-secret"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("items 2\n"), "\(r)")
        #expect(r.text.contains("service-exit=0"), "\(r)\n\(f.serviceLog)")
        // The vault holds the two good items and nothing else.
        let ls = f.coffer(["ls", "apps/"])
        #expect(ls.out.split(separator: "\n").count == 2, "\(ls)")
        let dhItem = try #require(ls.out.split(separator: "\n").map { String($0.split(separator: " ")[0]) }.first { $0.hasPrefix("apps/dh-") }, "\(ls)")
        #expect(f.coffer(["get", dhItem]).out == "dh-secret")
    }
    @Test func twoVaultsOnTwoBusesMeetThroughSync() throws {
        let f = try Fixture()
        #expect(f.home.unlocked(["export", "--out", "full.cb"]).status == 0)
        #expect(f.home.unlocked(["clone", "full.cb", "--vault", "b.coffer"]).status == 0)
        let pf = f.home.path("pf")
        FileManager.default.createFile(atPath: pf, contents: Data((f.home.passphrase + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let serviceB = "\"$COFFER\" secret-service --log --vault \"$WORK/b.coffer\" --passphrase-file \"$WORK/pf\""
        let sync = { (vault: String?) -> CLIResult in
            f.home.unlocked(["sync", f.home.path("bundles")] + (vault.map { ["--vault", $0] } ?? []))
        }
        try FileManager.default.createDirectory(atPath: f.home.path("bundles"), withIntermediateDirectories: true)

        // Stored on A, found on B after both synced.
        let a = f.onBus("printf 'from-a' | secret-tool store --label='Shared' app shared && echo stored")
        #expect(a.text.contains("stored"), "\(a)\n\(f.serviceLog)")
        #expect(sync(nil).status == 0)
        #expect(sync("b.coffer").status == 0)
        let b = f.onBus("echo \"lookup=$(secret-tool lookup app shared)\"", service: serviceB)
        #expect(b.text.contains("lookup=from-a\n"), "\(b)\n\(f.serviceLog)")

        // Concurrent changes of the same secret on A and B: a conflict, both kept.
        _ = f.onBus("printf 'edit-a' | secret-tool store --label='Shared' app shared")
        _ = f.onBus("printf 'edit-b' | secret-tool store --label='Shared' app shared", service: serviceB)
        #expect(sync(nil).status == 0)
        #expect(sync("b.coffer").status == 0)
        #expect(sync(nil).status == 0)
        let conflicts = f.coffer(["conflicts"])
        #expect(conflicts.stdout.contains("apps/shared-"), "\(conflicts)")
        #expect(conflicts.stdout.contains("secret"), "\(conflicts)")
        let looked = f.onBus("echo \"lookup=$(secret-tool lookup app shared)\"")
        #expect(looked.text.contains("lookup=edit-a\n") || looked.text.contains("lookup=edit-b\n"), "\(looked)")
        let lookedB = f.onBus("echo \"lookup=$(secret-tool lookup app shared)\"", service: serviceB)
        let shownA = looked.text.contains("lookup=edit-a\n") ? "edit-a" : "edit-b"
        #expect(lookedB.text.contains("lookup=\(shownA)\n"), "both replicas show the same side\n\(lookedB)")
    }

    /// A Smart-HTTP git server on loopback: `git http-backend` as CGI behind
    /// HTTP basic auth (user alice, the password read from a file at each
    /// request, so a test can change it). Writes its port to a file and a
    /// line per request to `auth.log` (challenged, refused, accepted).
    static let gitServer = #"""
        import base64, os, subprocess, sys
        from http.server import BaseHTTPRequestHandler, HTTPServer
        root, user, passfile, portfile = sys.argv[1:5]
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args): pass
            def serve(self):
                password = open(passfile).read().strip()
                expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
                given = self.headers.get("Authorization")
                with open(os.path.join(root, "auth.log"), "a") as log:
                    log.write("accepted\n" if given == expected else "refused\n" if given else "challenged\n")
                if given != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="coffer-test"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path, _, query = self.path.partition("?")
                env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL="1", REQUEST_METHOD=self.command,
                           PATH_INFO=path, QUERY_STRING=query, REMOTE_USER=user, REMOTE_ADDR="127.0.0.1",
                           CONTENT_TYPE=self.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(body)))
                for h in ("Content-Encoding", "Git-Protocol"):
                    if self.headers.get(h): env["HTTP_" + h.upper().replace("-", "_")] = self.headers[h]
                out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    k, _, v = line.partition(": ")
                    if k.lower() == "status": status = int(v.split()[0])
                    elif k: headers.append((k, v))
                self.send_response(status)
                for k, v in headers: self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            do_GET = serve
            do_POST = serve
        server = HTTPServer(("127.0.0.1", 0), Handler)
        with open(portfile + ".tmp", "w") as f: f.write(str(server.server_port))
        os.rename(portfile + ".tmp", portfile)
        server.serve_forever()
        """#

    /// git's libsecret credential helper, built from the sources Debian's git
    /// ships (/usr/share/doc/git/contrib/credential/libsecret) against
    /// libsecret-1-dev, keeps the credential of a real `git push` over
    /// loopback HTTP in the vault: the first push asks (GIT_ASKPASS) and
    /// git stores what worked; later pushes and a clone ask no one and get
    /// it from coffer; a password the server no longer takes is erased.
    @Test func gitsLibsecretHelperKeepsAPushCredentialInTheVault() throws {
        let f = try Fixture()
        let password = "tok-" + UUID().uuidString
        FileManager.default.createFile(atPath: f.home.path("server.py"), contents: Data(Self.gitServer.utf8))
        FileManager.default.createFile(atPath: f.home.path("server-pass"), contents: Data(password.utf8))
        // The first askpass answers; the second records that it was asked and fails.
        let askGood = "#!/bin/sh\necho \"$1\" >> \"$WORK/asked-good.log\"\ncase \"$1\" in Username*) echo alice;; *) echo '\(password)';; esac\n"
        let askNone = "#!/bin/sh\necho \"$1\" >> \"$WORK/asked-none.log\"\nexit 1\n"
        FileManager.default.createFile(atPath: f.home.path("ask-good"), contents: Data(askGood.utf8))
        FileManager.default.createFile(atPath: f.home.path("ask-none"), contents: Data(askNone.utf8))
        chmod(f.home.path("ask-good"), 0o755)
        chmod(f.home.path("ask-none"), 0o755)
        let r = f.onBus(
            #"""
            src=/usr/share/doc/git/contrib/credential/libsecret
            mkdir -p "$WORK/gcl" && cp "$src/git-credential-libsecret.c" "$src/Makefile" "$WORK/gcl/" \
              && timeout 120 make -s -C "$WORK/gcl" >"$WORK/gcl.log" 2>&1 || { echo helper-build-failed; cat "$WORK/gcl.log"; }
            mkdir -p "$WORK/srv" && git init -q --bare "$WORK/srv/remote.git" && git -C "$WORK/srv/remote.git" config http.receivepack true
            /usr/bin/python3 "$WORK/server.py" "$WORK/srv" alice "$WORK/server-pass" "$WORK/port" 2>"$WORK/server.log" &
            server=$!
            for i in $(seq 1 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
            url="http://127.0.0.1:$(cat "$WORK/port")/remote.git"
            export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1
            git config --global credential.helper "$WORK/gcl/git-credential-libsecret"
            git config --global user.name Tester; git config --global user.email tester@example.org
            git init -q "$WORK/repo" && cd "$WORK/repo" && git commit -q --allow-empty -m one
            GIT_ASKPASS="$WORK/ask-good" git push -q "$url" HEAD:refs/heads/main && echo push1-ok
            git commit -q --allow-empty -m two
            GIT_ASKPASS="$WORK/ask-none" git push -q "$url" HEAD:refs/heads/main && echo push2-ok
            GIT_ASKPASS="$WORK/ask-none" git clone -q -b main "$url" "$WORK/clone" && echo clone-ok
            echo "cloned=$(git -C "$WORK/clone" log --format=%s -1)"
            printf 'protocol=http\nhost=127.0.0.1:%s\n\n' "$(cat "$WORK/port")" | GIT_ASKPASS="$WORK/ask-none" git credential fill | sed 's/^/fill-/'
            echo "stored=$(secret-tool lookup protocol http user alice)"
            # The server changes the password: git erases the stored one.
            echo changed > "$WORK/server-pass"
            git commit -q --allow-empty -m three
            GIT_ASKPASS="$WORK/ask-none" git push -q "$url" HEAD:refs/heads/main 2>/dev/null || echo push3-refused
            echo "after-erase=$(secret-tool lookup protocol http user alice)"
            kill $server
            """#, timeout: 180)
        #expect(!r.timedOut, "\(r)")
        #expect(!r.text.contains("helper-build-failed"), "\(r)")
        #expect(r.text.contains("push1-ok"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("push2-ok"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("clone-ok"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("cloned=two\n"), "\(r)")
        #expect(r.text.contains("fill-username=alice\n"), "\(r)")
        #expect(r.text.contains("fill-password=\(password)\n"), "\(r)")
        #expect(r.text.contains("stored=\(password)\n"), "\(r)")
        #expect(r.text.contains("push3-refused"), "\(r)")
        #expect(r.text.contains("after-erase=\n"), "\(r)\n\(f.serviceLog)")
        #expect(r.text.contains("service-exit=0"), "\(r)\n\(f.serviceLog)")
        // Asked once (user name and password, first push), never after.
        let asked = (try? String(contentsOfFile: f.home.path("asked-good.log"), encoding: .utf8)) ?? ""
        #expect(asked.split(separator: "\n").count == 2, "\(asked)")
        #expect(!FileManager.default.fileExists(atPath: f.home.path("asked-none.log")), "a push after the first asked for the password")
        // The server saw the pushes authenticated, and the remote has both commits.
        let log = try String(contentsOfFile: f.home.path("srv/auth.log"), encoding: .utf8)
        #expect(log.contains("accepted"), "\(log)")
        let remote = TestHome.spawn(f.home, "/usr/bin/git", ["-C", f.home.path("srv/remote.git"), "log", "--format=%s", "main"])
        #expect(remote.out == "two\none", "\(remote)")
        // The helper's reads and writes went through coffer (names only in
        // the log); the erased item is gone from the vault.
        #expect(f.serviceLog.contains("git-credential-libsecret created apps/git-http-127-0-0-1-"), "\(f.serviceLog)")
        #expect(f.serviceLog.contains("git-credential-libsecret read apps/git-http-127-0-0-1-"), "\(f.serviceLog)")
        #expect(f.serviceLog.contains("git-credential-libsecret deleted apps/git-http-127-0-0-1-"), "\(f.serviceLog)")
        #expect(!f.serviceLog.contains(password))
        #expect(!f.coffer(["ls", "apps/"]).out.contains("apps/git-"), "\(f.coffer(["ls", "apps/"]))")
    }

    /// A bus that lets any user connect (dbus-run-session's default session
    /// configuration refuses every uid but its own at authentication).
    static let openBusConfig = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:tmpdir=/tmp</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """

    /// A request from another uid: the session bus already refuses that
    /// user's connection; on a bus configured to let it in, the service
    /// refuses its requests itself (the uid the bus daemon took with
    /// SO_PEERCRED) and keeps serving its own user. Needs root (to become
    /// `nobody` with setpriv).
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func aRequestFromAnotherUserIsRefused() throws {
        let f = try Fixture()
        let asNobody = "setpriv --reuid=65534 --regid=65534 --clear-groups"
        let search =
            "dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets org.freedesktop.Secret.Service.SearchItems dict:string:string:app,x"
        let body = """
            printf 'mine' | secret-tool store --label=Mine app x
            echo "nobody-id=$(\(asNobody) id -u)"
            \(asNobody) \(search) >"$WORK/nobody.out" 2>&1; echo "nobody-exit=$?"
            sed 's/^/nobody: /' "$WORK/nobody.out"
            echo "nobody-lookup=$(\(asNobody) secret-tool lookup app x 2>/dev/null)"
            echo "mine=$(secret-tool lookup app x)"
            """
        // dbus-run-session's own bus: nobody never reaches the service.
        let closed = f.onBus(body)
        #expect(closed.text.contains("nobody-id=65534\n"), "\(closed)")
        #expect(!closed.text.contains("nobody-exit=0"), "\(closed)")
        #expect(!closed.text.contains("org.freedesktop.DBus.Error.AccessDenied: the Secret Service"), "\(closed)")
        #expect(closed.text.contains("nobody-lookup=\n"), "\(closed)")
        #expect(closed.text.contains("mine=mine\n"), "\(closed)\n\(f.serviceLog)")
        #expect(!f.serviceLog.contains("refused"), "\(f.serviceLog)")

        // A bus that lets nobody in: the service itself says no.
        FileManager.default.createFile(atPath: f.home.path("open-bus.conf"), contents: Data(Self.openBusConfig.utf8))
        let open = f.onBus(body, busConfig: f.home.path("open-bus.conf"))
        #expect(open.text.contains("nobody-exit=1"), "\(open)")
        #expect(open.text.contains("nobody: Error org.freedesktop.DBus.Error.AccessDenied: the Secret Service of uid 0 serves that user only"), "\(open)")
        #expect(open.text.contains("nobody-lookup=\n"), "\(open)")
        #expect(open.text.contains("mine=mine\n"), "\(open)\n\(f.serviceLog)")
        #expect(open.text.contains("service-exit=0"), "\(open)\n\(f.serviceLog)")
        #expect(f.serviceLog.contains("refused SearchItems from /usr/bin/dbus-send: another user (uid 65534)"), "\(f.serviceLog)")
        #expect(!f.serviceLog.contains("nobody read"), "\(f.serviceLog)")
    }
}
