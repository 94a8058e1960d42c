package clients

import (
	"fmt"
	"sync"

	"github.com/rmqha/rmqha/libs/filter"
)

// ExpressionTypeSQL92 is the property-filter expression type (MessageSelector.bySql,
// consumer.SQL92); its subString is a selector of package filter.
const ExpressionTypeSQL92 = "SQL92"

// IsTagType reports whether an expression type selects by tags: "" or exactly "TAG", as
// RocketMQ's ExpressionType.isTagType decides ("tag" is not a tag type).
func IsTagType(typ string) bool { return typ == "" || typ == ExpressionTypeTag }

// IsTagType reports whether sd is a tag subscription (see the function IsTagType).
func (sd *SubscriptionData) IsTagType() bool { return IsTagType(sd.ExpressionType) }

// Selector returns the compiled selector of a non-TAG subscription built by the registry or
// BuildSelector, or why it did not compile (an error wrapping filter.ErrParse or
// ErrUnsupportedExpressionType). A TAG subscription has neither.
func (sd *SubscriptionData) Selector() (*filter.Expr, error) { return sd.selector, sd.selectorErr }

// BuildSelector builds the subscription a pull request carries (PullSysFlag's subscription
// bit with its subscription and expressionType fields): a tag expression as BuildSubscription
// does, any other type compiled through cache (nil compiles without caching). A selector that
// does not compile is an error here, not a subscription.
func BuildSelector(topic, expr, typ string, cache *FilterCache) (*SubscriptionData, error) {
	if IsTagType(typ) {
		return BuildSubscription(topic, expr)
	}
	sd := &SubscriptionData{Topic: topic, SubString: expr, ExpressionType: typ}
	if err := sd.rebuild(cache); err != nil {
		return nil, err
	}
	if sd.selectorErr != nil {
		return nil, sd.selectorErr
	}
	return sd, nil
}

// Bounds of a FilterCache.
const (
	// DefaultFilterCacheEntries is the most selectors a FilterCache keeps.
	DefaultFilterCacheEntries = 1024
	// DefaultFilterCacheBytes is the most selector text (bytes of subString) it keeps.
	DefaultFilterCacheBytes = 8 << 20
)

// FilterCache compiles each distinct selector once. Heartbeats repeat a consumer's
// subscriptions every 30 s and a pull consumer sends its selector with every pull, so the
// same few texts arrive over and over. Failures are cached too. When an entry would pass the
// bounds the cache is emptied and starts over: a client churning distinct selectors costs a
// parse each, as it would without a cache, and never more memory. Safe for concurrent use.
type FilterCache struct {
	mu         sync.Mutex
	m          map[cacheKey]compiled
	bytes      int
	maxEntries int
	maxBytes   int
}

type cacheKey struct{ typ, src string }

type compiled struct {
	expr *filter.Expr
	err  error
}

// NewFilterCache returns an empty cache holding at most maxEntries selectors of at most
// maxBytes of text together (values < 1 take the defaults).
func NewFilterCache(maxEntries, maxBytes int) *FilterCache {
	if maxEntries < 1 {
		maxEntries = DefaultFilterCacheEntries
	}
	if maxBytes < 1 {
		maxBytes = DefaultFilterCacheBytes
	}
	return &FilterCache{m: map[cacheKey]compiled{}, maxEntries: maxEntries, maxBytes: maxBytes}
}

// Compile returns the compiled selector of type typ (only SQL92 exists) and text src, or an
// error wrapping filter.ErrParse (a *filter.ParseError) or ErrUnsupportedExpressionType. A
// nil cache compiles without caching.
func (c *FilterCache) Compile(typ, src string) (*filter.Expr, error) {
	if c == nil {
		return compile(typ, src)
	}
	k := cacheKey{typ, src}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v.expr, v.err
	}
	expr, err := compile(typ, src) // outside the lock: a long selector does not stall others
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m)+1 > c.maxEntries || c.bytes+len(src) > c.maxBytes {
		clear(c.m)
		c.bytes = 0
	}
	if len(src) <= c.maxBytes {
		if _, dup := c.m[k]; !dup {
			c.m[k] = compiled{expr, err}
			c.bytes += len(src)
		}
	}
	return expr, err
}

// Len is the number of cached selectors.
func (c *FilterCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func compile(typ, src string) (*filter.Expr, error) {
	if typ != ExpressionTypeSQL92 {
		return nil, fmt.Errorf("%w: %q (only TAG and SQL92 exist)", ErrUnsupportedExpressionType, typ)
	}
	return filter.Parse(src)
}
