package metasync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
)

// SnapshotSource serves metasync snapshots to a follower. hintURL, when not
// empty, is the snapshotURL of the announcement that triggered the fetch and
// is tried first.
type SnapshotSource interface {
	Fetch(ctx context.Context, cluster, brokerName string, t Table, hintURL string) (Snapshot, error)
}

// MasterSource pulls a table straight from the group's master (the fallback
// path). It returns the raw GET_ALL_* body and the address it asked.
type MasterSource interface {
	Pull(ctx context.Context, t Table) (body []byte, masterAddr string, err error)
}

// maxSnapshotSize bounds an HTTP snapshot body (a large topics table is tens of MiB).
const maxSnapshotSize = 256 << 20

// HTTPSnapshots fetches snapshots from metasync instances over HTTP.
type HTTPSnapshots struct {
	// URLs are the base URLs of the metasync instances ("http://host:port"),
	// tried in order after the hint.
	URLs []string
	// Client is the HTTP client. Default: one with a 5s timeout.
	Client *http.Client
}

// NewHTTPSnapshots returns a client for the given base URLs.
func NewHTTPSnapshots(urls ...string) *HTTPSnapshots {
	return &HTTPSnapshots{URLs: urls, Client: &http.Client{Timeout: 5 * time.Second}}
}

// Fetch implements SnapshotSource. Each URL is tried until one answers with a
// snapshot; an instance that does not own the group (503) or holds nothing
// (404) passes to the next one.
func (h *HTTPSnapshots) Fetch(ctx context.Context, cluster, brokerName string, t Table, hintURL string) (Snapshot, error) {
	var urls []string
	if hintURL != "" && h.trusted(hintURL) {
		urls = append(urls, hintURL)
	}
	for _, base := range h.URLs {
		urls = append(urls, strings.TrimRight(base, "/")+SnapshotPath(cluster, brokerName, t))
	}
	if len(urls) == 0 {
		return Snapshot{}, fmt.Errorf("%w: no metasync URL", ErrUnavailable)
	}
	var errs []error
	for _, u := range urls {
		s, err := h.fetchOne(ctx, u)
		if err == nil {
			if s.Cluster != cluster || s.BrokerName != brokerName || s.Table != t {
				errs = append(errs, fmt.Errorf("%w: %s answered %s/%s/%s", ErrInvalidSnapshot, u, s.Cluster, s.BrokerName, s.Table))
				continue
			}
			return s, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return Snapshot{}, errors.Join(errs...)
}

// trusted reports whether a hint from an announcement points at one of the
// configured instances (any hint when none is configured): an announcement
// must not make a slave fetch from an arbitrary address.
func (h *HTTPSnapshots) trusted(hint string) bool {
	if len(h.URLs) == 0 {
		return true
	}
	hu, err := url.Parse(hint)
	if err != nil {
		return false
	}
	for _, base := range h.URLs {
		if bu, err := url.Parse(base); err == nil && bu.Scheme == hu.Scheme && bu.Host == hu.Host {
			return true
		}
	}
	return false
}

func (h *HTTPSnapshots) fetchOne(ctx context.Context, u string) (Snapshot, error) {
	c := h.Client
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSnapshotSize+1))
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: %s: %w", ErrUnavailable, u, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return Snapshot{}, fmt.Errorf("%w: %s", ErrNoSnapshot, u)
	case http.StatusServiceUnavailable:
		return Snapshot{}, fmt.Errorf("%w: %s", ErrNotOwner, u)
	default:
		return Snapshot{}, fmt.Errorf("%w: %s answered %s", ErrUnavailable, u, resp.Status)
	}
	if len(body) > maxSnapshotSize {
		return Snapshot{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrInvalidSnapshot, u, maxSnapshotSize)
	}
	return DecodeSnapshot(body)
}

// Invoker is the part of remoting.Client a puller needs.
type Invoker interface {
	Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error)
}

// PullTable sends t's GET_ALL_* request to addr and returns the body.
func PullTable(ctx context.Context, c Invoker, addr string, t Table) ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTable, string(t))
	}
	if addr == "" {
		return nil, fmt.Errorf("%w: no master address", ErrUnavailable)
	}
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(t.RequestCode(), nil, nil))
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrUnavailable, remoting.RequestName(t.RequestCode()), addr, err)
	}
	if resp.Code != remoting.Success {
		return nil, fmt.Errorf("%w: %s %s: %s %s", ErrMasterRefused, remoting.RequestName(t.RequestCode()), addr, remoting.ResponseName(resp.Code), resp.Remark)
	}
	return resp.Body, nil
}

// RemotingMaster is the MasterSource of a slave: GET_ALL_* over remoting to
// the address Addr returns (the broker's registration answer, or Consul).
type RemotingMaster struct {
	Client Invoker
	Addr   func() string
}

// Pull implements MasterSource.
func (m *RemotingMaster) Pull(ctx context.Context, t Table) ([]byte, string, error) {
	addr := ""
	if m.Addr != nil {
		addr = m.Addr()
	}
	body, err := PullTable(ctx, m.Client, addr, t)
	return body, addr, err
}
