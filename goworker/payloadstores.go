package goworker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// payloadStore is where referenced values live (docs/protocol.md, "Stores").
type payloadStore interface {
	// storeName is the name references use: wm://<name>/<key>.
	storeName() string
	// where is the store's location for messages, without any password.
	where() string
	// get returns the bytes ref names, checked against its size and SHA-256 (PayloadRefError).
	get(ctx context.Context, ref Ref) ([]byte, error)
	// put stores data, which ref names, under ref.Key; a key that exists already is left as it is.
	put(ctx context.Context, ref Ref, data []byte) error
	// close lets go of connections.
	close() error
}

// checkBytes returns a PayloadRefError unless data is what ref names (size, then SHA-256).
func checkBytes(ref Ref, data []byte, where string) error {
	if int64(len(data)) != ref.Size {
		return &PayloadRefError{URI: ref.URI(), Reason: fmt.Sprintf(
			"%s holds %d bytes, not %d", where, len(data), ref.Size)}
	}
	digest := sha256.Sum256(data)
	if hex.EncodeToString(digest[:]) != ref.SHA256 {
		return &PayloadRefError{URI: ref.URI(), Reason: fmt.Sprintf(
			"the bytes in %s do not match its sha256", where)}
	}
	return nil
}

// fileStore keeps each value in the file <dir>/<key>, on a directory every party mounts.
type fileStore struct {
	name string
	dir  string
}

func (s *fileStore) storeName() string { return s.name }
func (s *fileStore) where() string     { return "file://" + s.dir }
func (s *fileStore) close() error      { return nil }

// path is the file of key (validKey keeps it inside dir).
func (s *fileStore) path(key string) string { return filepath.Join(s.dir, filepath.FromSlash(key)) }

// get reads the value's file; its size is compared before reading, so a wrong file is not read.
func (s *fileStore) get(_ context.Context, ref Ref) ([]byte, error) {
	file, err := os.Open(s.path(ref.Key))
	if err != nil {
		return nil, s.readError(ref, err)
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, s.readError(ref, err)
	}
	if info.Size() != ref.Size {
		return nil, &PayloadRefError{URI: ref.URI(), Reason: fmt.Sprintf(
			"%s holds %d bytes, not %d", s.where(), info.Size(), ref.Size)}
	}
	data := make([]byte, info.Size())
	if _, err := io.ReadFull(file, data); err != nil {
		return nil, s.readError(ref, err)
	}
	return data, checkBytes(ref, data, s.where())
}

// readError explains a failed read: a missing value, a missing directory, or the OS's error.
func (s *fileStore) readError(ref Ref, err error) error {
	reason := fmt.Sprintf("cannot read %s: %v", s.where(), err)
	if errors.Is(err, fs.ErrNotExist) {
		reason = "not found in " + s.where()
		if info, statErr := os.Stat(s.dir); statErr != nil || !info.IsDir() {
			reason = s.where() + " is not a directory (not mounted?)"
		}
	}
	return &PayloadRefError{URI: ref.URI(), Reason: reason}
}

// put writes a temporary file beside the value's and renames it into place, so a reader never
// sees part of a value; it is synced first, so a reply never names a value a crash could lose.
func (s *fileStore) put(_ context.Context, ref Ref, data []byte) error {
	path := s.path(ref.Key)
	if _, err := os.Stat(path); err == nil {
		return nil // the same key always holds the same bytes
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	temp, err := os.CreateTemp(filepath.Dir(path), ".*.part")
	if err != nil {
		return err
	}
	err = temp.Chmod(0o644) // CreateTemp's 0600 would hide the value from other parties
	if err == nil {
		_, err = temp.Write(data)
	}
	if err == nil {
		err = temp.Sync()
	}
	if closeErr := temp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(temp.Name(), path)
	}
	if err != nil {
		os.Remove(temp.Name()) //nolint:errcheck // best effort: the write already failed
	}
	return err
}
