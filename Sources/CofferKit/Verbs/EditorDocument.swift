import Foundation

/// The text `coffer edit NAME` opens in `$VISUAL`/`$EDITOR`, and how the
/// edited text becomes an ``ItemEdit`` (docs/user-guide.md, "Editing in
/// your editor"):
///
/// ```
/// <the main secret: the type's primary field, e.g. password or key>
/// username: octo
/// url: https://github.com
///
/// free-form notes, any number of lines (the `notes` field)
/// ```
///
/// Line 1 is the main secret (empty when the item has none). Then one
/// `field: value` line per other field, up to the first empty line; after
/// it, everything is the `notes` field. Attachments are not shown and stay
/// as they are. A field whose line is removed is removed; a new line adds
/// a field.
public enum EditorDocument {
    /// The main secret's field, if the item has one shown on line 1.
    public static func mainField(of item: Item) -> Field? {
        guard let f = item.primaryField, f.name != notesField, !f.isFile else { return nil }
        return f
    }

    public static let notesField = "notes"

    /// Renders the item. Fails (usage) when a field other than notes has
    /// several lines, which the format cannot hold.
    public static func render(_ item: Item) throws(CofferError) -> String {
        let main = mainField(of: item)
        var lines = [main?.value ?? ""]
        for f in item.fields where !f.isFile && f.name != main?.name && f.name != notesField {
            guard !f.value.contains("\n") && !f.value.contains("\r") else {
                throw CofferError(
                    .usage, "field '\(f.name)' has several lines, which the editor format cannot show",
                    remedy: .init(.editFieldDirectly, "change it outside the editor", item: item.name, field: f.name))
            }
            lines.append("\(f.name): \(f.value)")
        }
        if let main, main.value.contains("\n") || main.value.contains("\r") {
            throw CofferError(
                .usage, "field '\(main.name)' has several lines, which the editor format cannot show",
                remedy: .init(.editFieldDirectly, "change it outside the editor", item: item.name, field: main.name))
        }
        var text = lines.joined(separator: "\n") + "\n"
        if let notes = item.field(notesField), !notes.isFile {
            text += "\n" + notes.value + (notes.value.hasSuffix("\n") ? "" : "\n")
        }
        return text
    }

    /// The changes between `item` and the edited `text`: only fields whose
    /// value changed are set, fields whose line is gone are unset. Errors
    /// (bad data, exit 65) name the line.
    public static func changes(from item: Item, editedText text: String) throws(CofferError) -> ItemEdit {
        var lines = text.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        lines = lines.map { $0.hasSuffix("\r") ? String($0.dropLast()) : $0 }
        let main = mainField(of: item)
        var edit = ItemEdit()
        var seen = Set<String>()
        func set(_ name: String, _ value: String) {
            if let old = item.field(name) {
                if old.value != value || old.isFile {
                    edit.setFields.append(Field(name: name, value: value, isSecret: old.isSecret))
                }
            } else {
                edit.setFields.append(Field(name: name, value: value, isSecret: item.type.defaultSecrecy(of: name)))
            }
        }
        // Line 1: the main secret.
        let first = lines.first ?? ""
        if let main {
            seen.insert(main.name)
            if first.isEmpty {
                edit.unsetFields.append(main.name)
            } else {
                set(main.name, first)
            }
        } else if !first.isEmpty {
            let name = item.type.primaryFieldName.flatMap { $0 == notesField ? nil : $0 }
            guard let name else {
                throw CofferError(
                    .badData, "line 1: this \(item.type.rawValue) item has no main secret, so line 1 must stay empty",
                    hint: "add the value as a `field: value` line instead")
            }
            seen.insert(name)
            set(name, first)
        }
        // Field lines up to the first empty line.
        var index = 1
        while index < lines.count, !lines[index].isEmpty {
            let line = lines[index]
            let number = index + 1
            guard let colon = line.firstIndex(of: ":") else {
                throw CofferError(.badData, "line \(number): expected `field: value`", hint: "separate notes from the fields with an empty line")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            var value = String(line[line.index(after: colon)...])
            if value.hasPrefix(" ") { value.removeFirst() }
            do { try Vault.checkFieldName(name) } catch {
                throw CofferError(
                    .badData, "line \(number): '\(name)' is not a valid field name", hint: "use letters, digits, '-', '_' or '.'; '@' and '=' are reserved")
            }
            guard name != notesField else {
                throw CofferError(.badData, "line \(number): notes go after an empty line, not on a `notes:` line")
            }
            if let f = item.field(name), f.isFile {
                throw CofferError(
                    .badData, "line \(number): '\(name)' is an attachment and cannot be edited as text",
                    remedy: .init(.replaceAttachment, "replace it with a file", item: item.name, name: name))
            }
            guard seen.insert(name).inserted else {
                throw CofferError(.badData, "line \(number): field '\(name)' is given twice")
            }
            set(name, value)
            index += 1
        }
        // Notes: everything after the empty line.
        if index < lines.count {
            var notes = lines[(index + 1)...].joined(separator: "\n")
            while notes.hasSuffix("\n") { notes.removeLast() }
            seen.insert(notesField)
            if notes.isEmpty {
                if item.field(notesField) != nil { edit.unsetFields.append(notesField) }
            } else {
                let old = item.field(notesField)?.value ?? ""
                if old.trimmingTrailingNewlines() != notes { set(notesField, notes) }
            }
        } else {
            seen.insert(notesField)
            if item.field(notesField) != nil { edit.unsetFields.append(notesField) }
        }
        // Fields whose line is gone (attachments are never in the text).
        for f in item.fields where !f.isFile && !seen.contains(f.name) {
            edit.unsetFields.append(f.name)
        }
        return edit
    }
}

extension String {
    func trimmingTrailingNewlines() -> String {
        var s = self
        while s.hasSuffix("\n") { s.removeLast() }
        return s
    }
}
