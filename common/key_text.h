// Keys and values as tables and messages print them, and keys as the command line reads them: one
// form both ways, so that any key a table shows (a UTF-8 name, a NUL byte, binary) can be typed
// back to address it.
//
// The printed form: UTF-8 characters as they are, except control characters; every other byte
// (control characters, bytes that are not part of valid UTF-8) as \xNN with two lower-case hex
// digits; a backslash as \\.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

namespace etcdadm {

// The printed form of `bytes`, cut after `max` characters of it with "..." (a cut form is for
// reading only).
std::string printable_bytes(const std::string& bytes, size_t max = std::numeric_limits<size_t>::max());

// The bytes a typed key stands for: \xNN (two hex digits, either case) and \\ read as
// printable_bytes writes them; any other backslash is itself, so a key typed as it is stays what it
// was unless it holds one of those two sequences.
std::string parse_printed_bytes(const std::string& typed);

}  // namespace etcdadm
