package route

// Permission bits of TopicConfig.Perm and QueueData.Perm (Java PermName).
const (
	// PermPriority marks a priority topic; not used by classic brokers.
	PermPriority = 8
	// PermRead allows consumers to pull.
	PermRead = 4
	// PermWrite allows producers to send.
	PermWrite = 2
	// PermInherit marks a template topic (TBW102) whose config new topics
	// inherit when they are auto-created on send.
	PermInherit = 1
)

// IsReadable reports whether perm has the read bit.
func IsReadable(perm int32) bool { return perm&PermRead == PermRead }

// IsWriteable reports whether perm has the write bit.
func IsWriteable(perm int32) bool { return perm&PermWrite == PermWrite }

// IsInherited reports whether perm has the inherit bit.
func IsInherited(perm int32) bool { return perm&PermInherit == PermInherit }
