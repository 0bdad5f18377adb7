package pgstore

// Queries that share SQL are written as templates (queries/*.sql.tmpl) and
// rendered to the .sql files sqlc reads; `make generate` runs this first.
//
//go:generate go run ./internal/sqltmpl ../../../queries
