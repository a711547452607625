// RAII over the SQLite C API: a connection, a prepared statement with bound parameters,
// and a transaction that rolls back unless committed. Every error is a morph::Error
// "PATH: OPERATION: what SQLite said".
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace morph::store {

class Statement;

class Database {
 public:
  // `flags` as sqlite3_open_v2's; the file must already exist unless SQLITE_OPEN_CREATE.
  static Database open(const std::string& path, int flags);

  const std::string& path() const { return path_; }
  sqlite3* get() const { return db_.get(); }

  // Runs SQL without parameters (schema, pragmas); never for values.
  void exec(const std::string& sql, std::string_view operation) const;
  Statement prepare(std::string_view sql, std::string_view operation) const;
  [[noreturn]] void fail(std::string_view operation) const;
  [[noreturn]] void fail(std::string_view operation, int code) const;

 private:
  struct Close {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
  };
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  std::unique_ptr<sqlite3, Close> db_;
  std::string path_;
};

class Statement {
 public:
  Statement(const Database& db, sqlite3_stmt* stmt, std::string operation)
      : db_(&db), stmt_(stmt), operation_(std::move(operation)) {}

  // Parameters are numbered from 1, as in SQLite.
  Statement& bind_int(int index, std::int64_t value);
  Statement& bind_real(int index, double value);
  Statement& bind_text(int index, std::string_view value);
  Statement& bind_optional_int(int index, std::optional<std::int64_t> value);

  bool step();  // true: a row is ready; false: done
  void run();   // steps once and expects no row
  void reset();  // for the next row of bindings (bindings are kept until rebound)

  std::int64_t column_int(int column) const;
  double column_real(int column) const;
  std::string column_text(int column) const;
  std::optional<std::int64_t> column_optional_int(int column) const;

 private:
  struct Finalize {
    void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
  };
  void check_bind(int code);
  const Database* db_;
  std::unique_ptr<sqlite3_stmt, Finalize> stmt_;
  std::string operation_;
};

// BEGIN IMMEDIATE for writes (the write lock is taken up front, so WAL readers never
// deadlock an upgrade), BEGIN DEFERRED for consistent multi-statement reads.
class Transaction {
 public:
  enum class Kind { read, write };
  Transaction(const Database& db, Kind kind, std::string operation);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  const Database& db_;
  std::string operation_;
  bool open_ = true;
};

}  // namespace morph::store
