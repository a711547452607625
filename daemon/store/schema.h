// The state database's schema: an ordered list of migrations, the version applied kept in
// PRAGMA user_version. A migration is never edited once released; a change is a new one.
#pragma once

#include <span>
#include <string_view>

#include "daemon/store/sqlite_handle.h"

namespace morph::store {

struct Migration {
  int version;      // 1, 2, ...: consecutive
  const char* sql;  // schema statements only, no values
};

// The migrations of this Morph; the last one's version is the schema it writes.
std::span<const Migration> schema_migrations();

// Brings `db` to the last of `migrations`, each in its own transaction with its
// user_version. Throws morph::Error naming the database when it is newer than the last
// migration (written by a newer Morph) or when the list is not consecutive.
void migrate(const Database& db, std::span<const Migration> migrations);

int schema_version(const Database& db);

// Throws morph::Error when `current` is newer than `latest`: written by a newer morphd;
// `advice` says what to do about it.
void refuse_newer_schema(const Database& db, int current, int latest, std::string_view advice);

}  // namespace morph::store
