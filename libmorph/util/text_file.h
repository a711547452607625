// Reading a whole text file, with errors that name the path: missing, a folder or
// anything else but a regular file (a FIFO, a socket, a device: refused without waiting
// on it), unreadable, or larger than `max_bytes`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace morph {

std::string read_text_file(const std::string& path, std::string_view what, std::size_t max_bytes = 256u << 20);

// Appends `line` and a newline to the file (created 0644 when missing) in one write(2) on an
// O_APPEND descriptor, so that the lines of several processes never interleave on a local file
// system. A failure (no space, no permission, a short write) throws an Error naming the path.
void append_text_line(const std::string& path, std::string_view line, std::string_view what);

// Replaces the file's contents with `text` (0644 when new) at once: written to a temporary
// file beside it, flushed to disk, then renamed over it, so that a reader (slurmctld
// loading PerfModelDir) sees the old file or the new one, never half of one. A failure
// throws an Error naming the path and leaves the old file as it was.
void replace_text_file(const std::string& path, std::string_view text, std::string_view what);

}  // namespace morph
