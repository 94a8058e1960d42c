package clients

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"
)

// JavaStringHash is Java's String.hashCode of s: h = 31*h + c over the
// UTF-16 code units of s (characters above U+FFFF count as two surrogates),
// in wrapping signed 32-bit arithmetic. Invalid UTF-8 bytes count as U+FFFD.
func JavaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + hi
			h = 31*h + lo
			continue
		}
		h = 31*h + r
	}
	return h
}

// TagsCode is the consume-queue tag code of a message's TAGS property
// (0 when there are no tags).
func TagsCode(tags string) int64 { return int64(JavaStringHash(tags)) }

// BuildSubscription parses a tag expression the way Java's FilterAPI does:
// "" and "*" subscribe to everything; otherwise the expression is split on
// "||", each part trimmed, empty parts dropped, and the rest become tagsSet
// with their Java hash codes in codeSet. An expression with no tag at all is
// ErrSubscriptionParse. SubVersion is left 0 for the caller to set.
func BuildSubscription(topic, expr string) (*SubscriptionData, error) {
	sd := &SubscriptionData{Topic: topic, SubString: expr, ExpressionType: ExpressionTypeTag}
	if err := sd.rebuild(nil); err != nil {
		return nil, err
	}
	return sd, nil
}

// rebuild normalises a TAG subscription and recomputes its code set from
// its tags (or from subString when it has none) with Java semantics. Any
// other type is compiled through cache (nil: without caching); a selector
// that does not compile is kept with its error (see Selector), since
// RocketMQ keeps such a heartbeat and refuses the group's pulls instead.
func (sd *SubscriptionData) rebuild(cache *FilterCache) error {
	if !sd.IsTagType() {
		sd.selector, sd.selectorErr = cache.Compile(sd.ExpressionType, sd.SubString)
		return nil
	}
	if strings.TrimSpace(sd.SubString) == "" || strings.TrimSpace(sd.SubString) == SubAll {
		sd.SubString, sd.TagsSet, sd.CodeSet = SubAll, nil, nil
		return nil
	}
	tags := sd.TagsSet
	if len(tags) == 0 {
		tags = strings.Split(sd.SubString, "||")
	}
	var set []string
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t != "" && !slices.Contains(set, t) {
			set = append(set, t)
		}
	}
	if len(set) == 0 {
		return fmt.Errorf("%w: %q", ErrSubscriptionParse, sd.SubString)
	}
	codes := make(CodeSet, 0, len(set))
	for _, t := range set {
		if c := JavaStringHash(t); !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	sd.TagsSet, sd.CodeSet = set, codes
	return nil
}

// MatchTagsCode reports whether a message with consume-queue tag code code
// passes the broker-side tag filter of sd. A nil subscription, class-filter
// mode, non-TAG expressions (their selector decides per record, see
// Selector) and "*" match everything; otherwise the low 32 bits of code
// must be in the code set.
func (sd *SubscriptionData) MatchTagsCode(code int64) bool {
	if sd == nil || sd.ClassFilterMode {
		return true
	}
	if !sd.IsTagType() {
		return true
	}
	if sd.SubString == "" || sd.SubString == SubAll {
		return true
	}
	return slices.Contains(sd.CodeSet, int32(code))
}

// clone returns a deep copy.
func (sd SubscriptionData) clone() SubscriptionData {
	sd.TagsSet = slices.Clone(sd.TagsSet)
	sd.CodeSet = slices.Clone(sd.CodeSet)
	return sd
}
