package clients

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJavaStringHash(t *testing.T) {
	for s, want := range map[string]int32{
		"":                   0,
		"a":                  97,
		"Aa":                 2112,
		"BB":                 2112,
		"TagA":               2598919,
		"hello":              99162322,
		"polygenelubricants": -2147483648, // wraps to Integer.MIN_VALUE
		"标签":                 26631*31 + 31614,
		"😀":                  55357*31 + 56832, // surrogate pair D83D DE00
		"a\xffb":             (97*31+0xFFFD)*31 + 98,
	} {
		require.Equal(t, want, JavaStringHash(s), "%q", s)
	}
	require.Equal(t, int64(-2147483648), TagsCode("polygenelubricants"), "sign-extended")
	require.Equal(t, int64(0), TagsCode(""))
}

// goClientHash hashes UTF-8 bytes as the Go client does for its codeSet.
func goClientHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); i++ {
		h = 31*h + int32(s[i])
	}
	return h
}

func TestBuildSubscription(t *testing.T) {
	for _, expr := range []string{"", "*", " * "} {
		sd, err := BuildSubscription("T", expr)
		require.NoError(t, err)
		require.Equal(t, "*", sd.SubString)
		require.Empty(t, sd.TagsSet)
		require.True(t, sd.MatchTagsCode(TagsCode("anything")))
		require.True(t, sd.MatchTagsCode(0))
	}
	sd, err := BuildSubscription("T", " TagA || TagB||||TagA ")
	require.NoError(t, err)
	require.Equal(t, "T", sd.Topic)
	require.Equal(t, "TAG", sd.ExpressionType)
	require.Equal(t, []string{"TagA", "TagB"}, sd.TagsSet)
	require.Equal(t, CodeSet{2598919, 2598920}, sd.CodeSet)
	require.True(t, sd.MatchTagsCode(TagsCode("TagA")))
	require.True(t, sd.MatchTagsCode(TagsCode("TagB")))
	require.False(t, sd.MatchTagsCode(TagsCode("TagC")))
	require.False(t, sd.MatchTagsCode(0), "untagged messages do not match a tag filter")

	for _, bad := range []string{"||", " || || "} {
		_, err := BuildSubscription("T", bad)
		require.ErrorIs(t, err, ErrSubscriptionParse, bad)
	}

	neg, err := BuildSubscription("T", "polygenelubricants")
	require.NoError(t, err)
	require.True(t, neg.MatchTagsCode(TagsCode("polygenelubricants")))

	var nilSub *SubscriptionData
	require.True(t, nilSub.MatchTagsCode(5))
	require.True(t, (&SubscriptionData{SubString: "a > 1", ExpressionType: "SQL92"}).MatchTagsCode(5))
	require.True(t, (&SubscriptionData{SubString: "x", ClassFilterMode: true}).MatchTagsCode(5))
}

func TestNonASCIITagsUseJavaHash(t *testing.T) {
	sd, err := BuildSubscription("T", "标签")
	require.NoError(t, err)
	require.NotEqual(t, goClientHash("标签"), JavaStringHash("标签"))
	require.True(t, sd.MatchTagsCode(TagsCode("标签")))
	require.False(t, sd.MatchTagsCode(int64(goClientHash("标签"))))
}
