package hawire

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// EpochHistory is an ordered list of (epoch, startOffset) entries: epochs
// strictly increase, start offsets never decrease. It is not safe for
// concurrent use; the owners lock around it.
type EpochHistory struct {
	entries []EpochEntry
}

// NewEpochHistory validates and copies entries.
func NewEpochHistory(entries []EpochEntry) (*EpochHistory, error) {
	h := &EpochHistory{}
	for _, e := range entries {
		if err := h.Append(e); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Entries returns a copy of the entries.
func (h *EpochHistory) Entries() []EpochEntry { return append([]EpochEntry(nil), h.entries...) }

// Len is the number of entries.
func (h *EpochHistory) Len() int { return len(h.entries) }

// Last returns the newest entry (zero, false when empty).
func (h *EpochHistory) Last() (EpochEntry, bool) {
	if len(h.entries) == 0 {
		return EpochEntry{}, false
	}
	return h.entries[len(h.entries)-1], true
}

// Append adds an entry after the last one.
func (h *EpochHistory) Append(e EpochEntry) error {
	if e.Epoch <= 0 || e.StartOffset < 0 {
		return fmt.Errorf("%w: entry %+v", ErrEpochOrder, e)
	}
	if l, ok := h.Last(); ok && (e.Epoch <= l.Epoch || e.StartOffset < l.StartOffset) {
		return fmt.Errorf("%w: %+v after %+v", ErrEpochOrder, e, l)
	}
	if len(h.entries) >= MaxEpochEntries {
		h.entries = append(h.entries[:0], h.entries[1:]...)
	}
	h.entries = append(h.entries, e)
	return nil
}

// TruncateTo drops every entry whose data would start at or after offset:
// after the log is cut at offset, those epochs hold nothing.
func (h *EpochHistory) TruncateTo(offset int64) {
	i := len(h.entries)
	for i > 0 && h.entries[i-1].StartOffset >= offset {
		i--
	}
	h.entries = h.entries[:i]
}

// Start returns the start offset of epoch e.
func (h *EpochHistory) Start(e int64) (int64, bool) {
	for _, x := range h.entries {
		if x.Epoch == e {
			return x.StartOffset, true
		}
	}
	return 0, false
}

// At returns the epoch owning offset and where that epoch ends (the next
// entry's start, or -1 for the last epoch). ok is false before the first entry.
func (h *EpochHistory) At(offset int64) (epoch, end int64, ok bool) {
	for i := len(h.entries) - 1; i >= 0; i-- {
		if h.entries[i].StartOffset <= offset {
			// Several entries may share a start offset (empty epochs): the
			// newest one owns the data.
			end = -1
			for j := i + 1; j < len(h.entries); j++ {
				if h.entries[j].StartOffset > offset {
					end = h.entries[j].StartOffset
					break
				}
			}
			return h.entries[i].Epoch, end, true
		}
	}
	return 0, 0, false
}

// CommonPoint is the master's side of divergence detection. Given the
// master's history and MaxOffset and the slave's last epoch (with its start)
// and MaxOffset, it returns the highest offset up to which both logs are
// known to hold the same data, or -1 when they share nothing.
//
// It takes the largest master epoch ≤ the slave's last epoch; that epoch's
// end in the master's log bounds what they share. If the master never had the
// slave's epoch, or had it with another start, the slave's data of that epoch
// differs from its start on.
func CommonPoint(master []EpochEntry, masterMax, slaveEpoch, slaveEpochStart, slaveMax int64) int64 {
	idx := -1
	for i := len(master) - 1; i >= 0; i-- {
		if master[i].Epoch <= slaveEpoch {
			idx = i
			break
		}
	}
	if idx < 0 {
		return -1
	}
	end := masterMax
	if idx+1 < len(master) {
		end = master[idx+1].StartOffset
	}
	common := min(slaveMax, end)
	if master[idx].Epoch != slaveEpoch || master[idx].StartOffset != slaveEpochStart {
		common = min(common, slaveEpochStart)
		if master[idx].Epoch == slaveEpoch {
			common = min(common, master[idx].StartOffset)
		}
	}
	return common
}

// ---------------------------------------------------------------- file

// EpochFileName is the file kept in EpochDir.
const EpochFileName = "ha-epochs"

const epochFileHeader = "rmqha-epochs v1"

// LoadEpochFile reads dir/EpochFileName. A missing file is an empty history;
// an empty dir means no persistence (empty history).
//
// Format (text, one item per line):
//
//	rmqha-epochs v1
//	<epoch> <startOffset>      (one line per entry, oldest first)
//	crc <crc32c of all preceding bytes, 8 hex digits>
func LoadEpochFile(dir string) ([]EpochEntry, error) {
	if dir == "" {
		return nil, nil
	}
	b, err := os.ReadFile(filepath.Join(dir, EpochFileName))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseEpochFile(b)
}

func parseEpochFile(b []byte) ([]EpochEntry, error) {
	i := bytes.LastIndex(bytes.TrimRight(b, "\n"), []byte("\ncrc "))
	if i < 0 {
		return nil, fmt.Errorf("%w: no crc line", ErrEpochFile)
	}
	body, tail := b[:i+1], strings.TrimSpace(string(b[i+1:]))
	want, err := strconv.ParseUint(strings.TrimPrefix(tail, "crc "), 16, 32)
	if err != nil || crc32.Checksum(body, castagnoli) != uint32(want) {
		return nil, fmt.Errorf("%w: crc mismatch", ErrEpochFile)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	if !sc.Scan() || sc.Text() != epochFileHeader {
		return nil, fmt.Errorf("%w: bad header", ErrEpochFile)
	}
	var out []EpochEntry
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: bad line %q", ErrEpochFile, sc.Text())
		}
		e, err1 := strconv.ParseInt(f[0], 10, 64)
		s, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: bad line %q", ErrEpochFile, sc.Text())
		}
		out = append(out, EpochEntry{Epoch: e, StartOffset: s})
	}
	if _, err := NewEpochHistory(out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEpochFile, err)
	}
	return out, nil
}

func formatEpochFile(entries []EpochEntry) []byte {
	var b bytes.Buffer
	b.WriteString(epochFileHeader + "\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	fmt.Fprintf(&b, "crc %08x\n", crc32.Checksum(b.Bytes(), castagnoli))
	return b.Bytes()
}

// SaveEpochFile replaces dir/EpochFileName atomically: write a temporary
// file, fsync it, rename it over the old one, fsync the directory. An empty
// dir means no persistence.
func SaveEpochFile(dir string, entries []EpochEntry) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	final := filepath.Join(dir, EpochFileName)
	tmp := final + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(formatEpochFile(entries)); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
