/// `text` as a double-quoted string in the syntax JSON and YAML share: `\"`, `\\`, `\n`,
/// `\r` and `\t` escaped, and every other scalar for which `needsUnicodeEscape` holds
/// written as `\u` and four hex digits (callers only escape scalars below U+10000). The
/// formats differ only in which scalars they must escape and, by convention, the hex case.
package func doubleQuoted(_ text: String, uppercaseHex: Bool,
                          needsUnicodeEscape: (Unicode.Scalar) -> Bool) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if needsUnicodeEscape(scalar) {
                let hex = String(scalar.value, radix: 16, uppercase: uppercaseHex)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

/// `text` as a message quotes a user's input: whole when it is short, else its first
/// `limit` characters and how long it was, so a malformed 50 MB line is named without being
/// echoed to the terminal.
package func excerpt(_ text: some StringProtocol, limit: Int = 60) -> String {
    guard text.utf8.count > limit else { return String(text) }
    return String(text.prefix(limit)) + "… (\(text.utf8.count) bytes)"
}
