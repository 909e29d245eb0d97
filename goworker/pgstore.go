package goworker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"strings"
	"sync"

	"github.com/lib/pq" // registers the "postgres" database/sql driver
)

// createPayloadsTable is the table of docs/protocol.md's "Stores"; whoever uses it first creates it.
const createPayloadsTable = `CREATE TABLE IF NOT EXISTS wm_payloads (
    key       text PRIMARY KEY,
    job_id    text NOT NULL,
    sha256    text NOT NULL,
    size      bigint NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now(),
    value     bytea NOT NULL
)`

// pgStore keeps each value in a row of the table wm_payloads of a PostgreSQL database.
type pgStore struct {
	name     string
	url      string
	location string // the URL with its password masked

	mu sync.Mutex
	db *sql.DB // connected, with the table known to exist; nil until the first use
}

// newPGStore returns the store of the database at url; it connects at its first use.
func newPGStore(name, url string) *pgStore {
	return &pgStore{name: name, url: url, location: MaskURL(url)}
}

func (s *pgStore) storeName() string { return s.name }
func (s *pgStore) where() string     { return s.location }

func (s *pgStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	return s.db.Close()
}

// open connects once and creates wm_payloads if need be.
func (s *pgStore) open(ctx context.Context) (*sql.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		return s.db, nil
	}
	db, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	_, err = db.ExecContext(ctx, createPayloadsTable)
	// Two parties creating the table at once may see a unique violation on the catalog
	// (CREATE TABLE IF NOT EXISTS is not atomic): the table then exists.
	var pgErr *pq.Error
	if err != nil && !(errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P07")) {
		db.Close()
		return nil, err
	}
	s.db = db
	return db, nil
}

// connect opens the database as libpq's default sslmode "prefer" would: over TLS when the
// server offers it, else in plain (lib/pq knows no "prefer": without sslmode it insists on TLS).
func (s *pgStore) connect(ctx context.Context) (*sql.DB, error) {
	u, err := neturl.Parse(s.url)
	if err != nil {
		return nil, err
	}
	query := u.Query()
	mode := query.Get("sslmode")
	prefer := mode == "prefer" || mode == "allow" || (mode == "" && os.Getenv("PGSSLMODE") == "")
	if prefer {
		query.Set("sslmode", "require")
		u.RawQuery = query.Encode()
	}
	db, err := sql.Open("postgres", u.String())
	if err == nil {
		err = db.PingContext(ctx)
	}
	if prefer && errors.Is(err, pq.ErrSSLNotSupported) {
		db.Close()
		query.Set("sslmode", "disable")
		u.RawQuery = query.Encode()
		db, err = sql.Open("postgres", u.String())
		if err == nil {
			err = db.PingContext(ctx)
		}
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, err
	}
	return db, nil
}

// get reads the value's row.
func (s *pgStore) get(ctx context.Context, ref Ref) ([]byte, error) {
	db, err := s.open(ctx)
	if err != nil {
		return nil, &PayloadRefError{URI: ref.URI(), Reason: s.unreachable(err)}
	}
	var data []byte
	err = db.QueryRowContext(ctx, `SELECT value FROM wm_payloads WHERE key = $1`, ref.Key).Scan(&data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, &PayloadRefError{URI: ref.URI(), Reason: "not found in " + s.location}
	case err != nil:
		return nil, &PayloadRefError{URI: ref.URI(), Reason: s.unreachable(err)}
	}
	return data, checkBytes(ref, data, s.location)
}

// put inserts the value's row; a key that exists already is left as it is.
func (s *pgStore) put(ctx context.Context, ref Ref, data []byte) error {
	db, err := s.open(ctx)
	if err != nil {
		return err
	}
	job, _, _ := strings.Cut(ref.Key, "/")
	_, err = db.ExecContext(ctx, `INSERT INTO wm_payloads (key, job_id, sha256, size, value)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (key) DO NOTHING`,
		ref.Key, job, ref.SHA256, ref.Size, data)
	return err
}

// unreachable explains a failed query.
func (s *pgStore) unreachable(err error) string {
	return fmt.Sprintf("cannot read %s: %v", s.location, err)
}
