import CofferKit
import CofferSync
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `coffer edit NAME` with no change options: the item in $VISUAL or
/// $EDITOR (docs/user-guide.md, "Editing in your editor").
enum EditInEditor {
    static func run(options: VaultOptions, name: String, unsafeTmp: Bool, requirements: String?, force: Bool) throws {
        let env = ProcessInfo.processInfo.environment
        let configured = [env["VISUAL"], env["EDITOR"]].compactMap { $0 }.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        guard configured != nil || (Output.stdinIsTerminal && Output.stdoutIsTerminal) else {
            // No editor chosen and no terminal for vi: a script that gave
            // no change option made a mistake.
            throw CofferError(.usage, "nothing to change", hint: "give change options (see `coffer edit --help`), or set $EDITOR to edit the item in an editor")
        }
        let folderBase = try privateBase(env: env, unsafeTmp: unsafeTmp)
        let manifest = try CredentialGate.loadManifest(requirements)
        let vault = try options.unlockForWriting()
        let item = try vault.item(named: name)
        let text = try EditorDocument.render(item)

        // A fresh 0700 folder with one 0600 file in it.
        var template = Array((folderBase + "/coffer-edit-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CofferError(.cannotCreate, "cannot create a private folder in \(folderBase): \(String(cString: strerror(errno)))")
        }
        let folder = String(cString: made)
        let file = folder + "/item.txt"
        defer {
            PrivateFile.wipeAndRemove(path: file, maxSize: maxFile)
            // Editors may leave backup or swap files: wipe them too.
            if let rest = try? FileManager.default.contentsOfDirectory(atPath: folder) {
                for r in rest { PrivateFile.wipeAndRemove(path: folder + "/" + r, maxSize: maxFile) }
            }
            rmdir(folder)
        }
        do { try PrivateFile.create(path: file, bytes: Array(text.utf8)) } catch {
            throw CofferError(.cannotCreate, "cannot create \(file): \(error)")
        }

        let editor = configured ?? "vi"
        let termination: ChildTermination
        do {
            // Through the shell, as git does, so EDITOR may carry options
            // ("code --wait"); the file name is an argument, not code.
            termination = try ChildProcess.run(
                ["/bin/sh", "-c", editor + " \"$1\"", "coffer-edit", file],
                environment: env.map { "\($0.key)=\($0.value)" })
        } catch {
            throw CofferError(.fileNotFound, "cannot start the editor '\(editor)': \(error)", hint: "set VISUAL or EDITOR to an editor on PATH")
        }
        guard termination.exitCode == 0 else {
            throw CofferError(.usage, "the editor '\(editor)' exited with status \(termination.status); nothing was changed")
        }
        let edited = try readBack(file)
        let edit = try EditorDocument.changes(from: item, editedText: edited)
        guard !edit.isEmpty else {
            Output.note("no changes to \(item.name)")
            return
        }
        try CredentialGate.run(vault: vault, fields: edit.setFields, type: item.type, source: item.source, manifest: manifest, force: force)
        let updated = try vault.edit(item.id.idName, edit)
        let changed = (edit.setFields.map(\.name) + edit.unsetFields).sorted()
        Output.note("updated \(updated.name): \(changed.joined(separator: ", "))")
    }

    static let maxFile = Field.maxValueBytes * 2

    /// $XDG_RUNTIME_DIR when it is a private folder; a shared temporary
    /// folder only with --unsafe-tmp.
    static func privateBase(env: [String: String], unsafeTmp: Bool) throws(CofferError) -> String {
        if let r = env["XDG_RUNTIME_DIR"], r.hasPrefix("/"), PrivateFile.isPrivateDirectory(r) == true {
            return r
        }
        guard unsafeTmp else {
            throw CofferError(
                .usage,
                "no private runtime folder: $XDG_RUNTIME_DIR is not set or not a 0700 folder of yours, and the item's secrets would be written to a shared temporary folder",
                hint: "log in with a session that sets XDG_RUNTIME_DIR, or accept the risk with --unsafe-tmp")
        }
        var tmp = env["TMPDIR"] ?? "/tmp"
        if !tmp.hasPrefix("/") { tmp = "/tmp" }
        return tmp
    }

    /// The edited text: UTF-8, at most a sane size.
    static func readBack(_ path: String) throws(CofferError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CofferError(.badData, "the edited file \(path) is gone; nothing was changed", hint: "save the file in place before quitting the editor")
        }
        guard data.count <= maxFile else { throw CofferError(.badData, "the edited file is larger than 32 MiB; nothing was changed") }
        guard let text = String(data: data, encoding: .utf8) else {
            throw CofferError(.badData, "the edited file is not UTF-8 text; nothing was changed")
        }
        return text
    }
}

extension ItemID {
    /// `id:HEX`: addresses the item even if it is renamed meanwhile.
    var idName: String { "id:" + hex }
}
