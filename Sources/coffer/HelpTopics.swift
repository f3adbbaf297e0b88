import CofferKit
import Foundation

/// A page of Coffer's documentation, compiled into the binary
/// (HelpTopicTexts.swift, generated from docs/ by
/// scripts/gen-help-topics.py), so that `coffer help TOPIC` works where
/// the docs folder is not: an installed coffer.
struct HelpTopic {
    var name: String
    var file: String
    var title: String
    var text: String
}

/// `coffer help TOPIC` and `coffer help topics` (issue 28 item 3). A
/// topic's name wins over a command's: `coffer help sync` prints the sync
/// guide, which ends by pointing at `coffer sync --help` for the command's
/// options. Any other `coffer help …` is argument-parser's.
enum HelpTopics {
    static var all: [HelpTopic] { HelpTopicTexts.topics }

    static func named(_ name: String) -> HelpTopic? { all.first { $0.name == name } }

    /// Handles `help topics` and `help TOPIC`; false for anything else.
    static func run(_ arguments: [String]) -> Bool {
        guard arguments.count == 2, arguments[0] == "help" else { return false }
        if arguments[1] == "topics" {
            Output.out(list())
            return true
        }
        guard let topic = named(arguments[1]) else { return false }
        Output.out(page(topic))
        return true
    }

    /// One line per topic: its name and its title.
    static func list() -> String {
        let width = all.map(\.name.count).max() ?? 0
        let lines = all.map { "  " + $0.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.title }
        return "Topics (print one with `coffer help TOPIC`):\n" + lines.joined(separator: "\n")
    }

    /// The topic's text, then where its commands' options are.
    static func page(_ topic: HelpTopic) -> String {
        var out = topic.text
        if Coffer.configuration.subcommands.contains(where: { $0.configuration.commandName == topic.name }) {
            out += "\n\n(The options of the command: `coffer \(topic.name) --help`.)"
        }
        return out
    }
}
