package remoting

import "sync"

// Custom header fields kept in order, without a map
//
// A request of an InlineHandler (a send) is read by its handler once, field by field; filling
// a map for it (hashing every key, then hashing them again for each lookup) cost about a tenth
// of a send's CPU on the broker. So the server decodes such a request's extFields into a list of
// pairs instead (Command.pairs, the strings sharing the header's one copy), and Ext and
// ExtLookup scan it: a dozen short keys compare faster than they hash. ExtFields stays nil
// until something needs the map: MaterializeExt builds it (the server does before a guard that
// reads ext fields). Only a header whose "code" comes before its "extFields" (as every RocketMQ
// client writes it) is decoded so; any other gets the map.

// extPair is one custom header field.
type extPair struct{ k, v string }

// maxPooledPairs is the largest pair list kept for reuse.
const maxPooledPairs = 32

var pairsPool sync.Pool // of *[]extPair, emptied

func newPairs() *[]extPair {
	if p, ok := pairsPool.Get().(*[]extPair); ok {
		return p
	}
	p := make([]extPair, 0, 16)
	return &p
}

// ExtLookup returns the ext field key and whether it is present, from the map or, for a
// request decoded into pairs, from those (the last of a repeated key, as the map keeps it).
func (c *Command) ExtLookup(key string) (string, bool) {
	if c.pairs != nil {
		ps := *c.pairs
		for i := len(ps) - 1; i >= 0; i-- {
			if ps[i].k == key {
				return ps[i].v, true
			}
		}
		return "", false
	}
	v, ok := c.ExtFields[key]
	return v, ok
}

// RangeExt calls fn with every ext field: a request decoded into pairs gives them in their
// order in the header, repeated keys included (so that the last one seen is the one ExtLookup
// returns); a map gives its fields in no order.
func (c *Command) RangeExt(fn func(k, v string)) {
	if c.pairs != nil {
		for _, p := range *c.pairs {
			fn(p.k, p.v)
		}
		return
	}
	for k, v := range c.ExtFields {
		fn(k, v)
	}
}

// MaterializeExt makes ExtFields hold a request's custom header when it was decoded into
// pairs (see the top of the file); a no-op otherwise.
func (c *Command) MaterializeExt() {
	if c.pairs == nil {
		return
	}
	m := newExtMap(len(*c.pairs))
	for _, p := range *c.pairs {
		m[p.k] = p.v
	}
	c.ExtFields = m
	c.releasePairs()
}

func (c *Command) releasePairs() {
	p := c.pairs
	c.pairs = nil
	if p == nil || cap(*p) > maxPooledPairs {
		return
	}
	clear(*p)
	*p = (*p)[:0]
	pairsPool.Put(p)
}

// extPairs reads an extFields object (f.i at '{') into c's pairs.
func (f *fastScanner) extPairs(c *Command) bool {
	if c.pairs == nil {
		c.pairs = newPairs()
	}
	return f.extStrings(func(k, v string) { *c.pairs = append(*c.pairs, extPair{k, v}) })
}
