package metasync

import (
	"fmt"
	"strings"
)

// DefaultSubjectPrefix roots the announcement hierarchy:
//
//	rmqha.meta.<cluster>.<brokerName>.<table>      announcements (metasync → slaves)
//	rmqha.metastatus.<cluster>.<brokerName>.<id>   follower reports (slaves → metasync)
//	rmqha.metachanged.<cluster>.<brokerName>       "pull me now" (a master → metasync)
//
// A slave subscribes to rmqha.meta.<cluster>.<brokerName>.* ; metasync's
// status page subscribes to rmqha.metastatus.> .
const DefaultSubjectPrefix = "rmqha.meta"

// statusSuffix turns the announcement prefix into the report prefix
// (rmqha.meta → rmqha.metastatus), so that a slave's wildcard never matches a
// report.
const statusSuffix = "status"

// changedSuffix turns the prefix into the master doorbell prefix (rmqha.metachanged).
const changedSuffix = "changed"

// EscapeToken makes a cluster or broker name safe as one subject token:
// bytes outside [A-Za-z0-9_|-] become %XX (RocketMQ names hardly ever need it;
// a '.' would otherwise split the token).
func EscapeToken(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '|' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: bad escape in %q", ErrInvalidSubject, s)
		}
		var c byte
		if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err != nil {
			return "", fmt.Errorf("%w: bad escape in %q", ErrInvalidSubject, s)
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}

func checkNames(cluster, brokerName string) error {
	if cluster == "" || brokerName == "" {
		return fmt.Errorf("%w: cluster %q broker %q", ErrInvalidName, cluster, brokerName)
	}
	return nil
}

// Subject is the announcement subject of one table of one broker group.
func Subject(prefix, cluster, brokerName string, t Table) string {
	return prefix + "." + EscapeToken(cluster) + "." + EscapeToken(brokerName) + "." + string(t)
}

// GroupSubject is the wildcard a slave subscribes to: every table of its group.
func GroupSubject(prefix, cluster, brokerName string) string {
	return prefix + "." + EscapeToken(cluster) + "." + EscapeToken(brokerName) + ".*"
}

// StatusSubject is where the follower of broker id brokerID reports what it holds.
func StatusSubject(prefix, cluster, brokerName string, brokerID int64) string {
	return fmt.Sprintf("%s%s.%s.%s.%d", prefix, statusSuffix, EscapeToken(cluster), EscapeToken(brokerName), brokerID)
}

// ChangedSubject is the doorbell a master (or an admin tool) may ring after
// changing a table: metasync pulls that group at once instead of waiting for
// its next scheduled pull. The payload is ignored.
func ChangedSubject(prefix, cluster, brokerName string) string {
	return prefix + changedSuffix + "." + EscapeToken(cluster) + "." + EscapeToken(brokerName)
}

// ChangedWildcard matches every ChangedSubject under prefix.
func ChangedWildcard(prefix string) string { return prefix + changedSuffix + ".>" }

// ParseChangedSubject splits a ChangedSubject.
func ParseChangedSubject(prefix, subject string) (cluster, brokerName string, err error) {
	rest, ok := strings.CutPrefix(subject, prefix+changedSuffix+".")
	if !ok {
		return "", "", fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	c, b, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(b, ".") {
		return "", "", fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	if cluster, err = UnescapeToken(c); err != nil {
		return "", "", err
	}
	if brokerName, err = UnescapeToken(b); err != nil {
		return "", "", err
	}
	return cluster, brokerName, checkNames(cluster, brokerName)
}

// StatusWildcard matches every follower report under prefix.
func StatusWildcard(prefix string) string { return prefix + statusSuffix + ".>" }

// ParseSubject splits an announcement subject.
func ParseSubject(prefix, subject string) (cluster, brokerName string, t Table, err error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return "", "", "", fmt.Errorf("%w: %q is not under %q", ErrInvalidSubject, subject, prefix)
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	if cluster, err = UnescapeToken(parts[0]); err != nil {
		return "", "", "", err
	}
	if brokerName, err = UnescapeToken(parts[1]); err != nil {
		return "", "", "", err
	}
	if t, err = ParseTable(parts[2]); err != nil {
		return "", "", "", err
	}
	if err = checkNames(cluster, brokerName); err != nil {
		return "", "", "", err
	}
	return cluster, brokerName, t, nil
}
