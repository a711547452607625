#include "daemon/store/sqlite_handle.h"

#include <fmt/format.h>

#include <climits>

#include "libmorph/util/error.h"

namespace morph::store {

Database Database::open(const std::string& path, int flags) {
  sqlite3* raw = nullptr;
  const int code = sqlite3_open_v2(path.c_str(), &raw, flags | SQLITE_OPEN_NOFOLLOW, nullptr);
  Database db(raw, path);  // closes `raw` even when opening failed
  if (code != SQLITE_OK) {
    if (raw == nullptr) throw Error(fmt::format("{}: open the state database: {}", path, sqlite3_errstr(code)));
    db.fail("open the state database", code);
  }
  sqlite3_extended_result_codes(raw, 1);
  return db;
}

void Database::fail(std::string_view operation) const { fail(operation, sqlite3_errcode(get())); }

void Database::fail(std::string_view operation, int code) const {
  std::string message = get() != nullptr ? sqlite3_errmsg(get()) : sqlite3_errstr(code);
  if ((code & 0xff) == SQLITE_NOTADB || (code & 0xff) == SQLITE_CORRUPT)
    message += " (not a Morph state database, or a damaged one: move it away and morphd starts a new one)";
  if (code == SQLITE_CONSTRAINT_FOREIGNKEY) message += " (what it refers to, such as its job, is not recorded)";
  throw Error(fmt::format("{}: {}: {}", path_, operation, message));
}

void Database::exec(const std::string& sql, std::string_view operation) const {
  if (sqlite3_exec(get(), sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(operation);
}

Statement Database::prepare(std::string_view sql, std::string_view operation) const {
  sqlite3_stmt* stmt = nullptr;
  if (sql.size() > static_cast<std::size_t>(INT_MAX)) throw Error(fmt::format("{}: {}: statement too long", path_, operation));
  const int code = sqlite3_prepare_v2(get(), sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  Statement statement(*this, stmt, std::string(operation));
  if (code != SQLITE_OK) fail(operation, code);
  return statement;
}

void Statement::check_bind(int code) {
  if (code != SQLITE_OK) db_->fail(operation_, code);
}

Statement& Statement::bind_int(int index, std::int64_t value) {
  check_bind(sqlite3_bind_int64(stmt_.get(), index, value));
  return *this;
}

Statement& Statement::bind_real(int index, double value) {
  check_bind(sqlite3_bind_double(stmt_.get(), index, value));
  return *this;
}

Statement& Statement::bind_text(int index, std::string_view value) {
  check_bind(sqlite3_bind_text64(stmt_.get(), index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_optional_int(int index, std::optional<std::int64_t> value) {
  if (value) return bind_int(index, *value);
  check_bind(sqlite3_bind_null(stmt_.get(), index));
  return *this;
}

bool Statement::step() {
  const int code = sqlite3_step(stmt_.get());
  if (code == SQLITE_ROW) return true;
  if (code == SQLITE_DONE) return false;
  db_->fail(operation_, code);
}

void Statement::run() {
  if (step()) throw Error(fmt::format("{}: {}: the statement returned a row", db_->path(), operation_));
}

void Statement::reset() {
  // sqlite3_reset repeats the last step's error, which run() has already thrown.
  sqlite3_reset(stmt_.get());
}

std::int64_t Statement::column_int(int column) const { return sqlite3_column_int64(stmt_.get(), column); }

double Statement::column_real(int column) const { return sqlite3_column_double(stmt_.get(), column); }

std::string Statement::column_text(int column) const {
  const auto* text = sqlite3_column_text(stmt_.get(), column);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text), static_cast<std::size_t>(sqlite3_column_bytes(stmt_.get(), column))};
}

std::optional<std::int64_t> Statement::column_optional_int(int column) const {
  if (sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL) return std::nullopt;
  return column_int(column);
}

Transaction::Transaction(const Database& db, Kind kind, std::string operation) : db_(db), operation_(std::move(operation)) {
  db_.exec(kind == Kind::write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED", operation_);
}

Transaction::~Transaction() {
  if (open_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT", operation_);
  open_ = false;
}

}  // namespace morph::store
