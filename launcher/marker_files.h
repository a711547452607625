#ifndef MORPH_LAUNCHER_MARKER_FILES_H_
#define MORPH_LAUNCHER_MARKER_FILES_H_

#include <functional>
#include <string>

namespace morph::launcher {

// Removes the files of `dir` whose name `matches` accepts: the markers morphrun leaves beside
// a job's checkpoints (save requests, a step's checkpoint choice). The folder is listed before
// anything goes, since a removal during the listing may make it skip or repeat entries. Errors
// are ignored: a marker left behind belongs to a finished step, which nothing reads again.
void remove_marker_files(const std::string& dir, const std::function<bool(const std::string& name)>& matches);

}  // namespace morph::launcher

#endif  // MORPH_LAUNCHER_MARKER_FILES_H_
