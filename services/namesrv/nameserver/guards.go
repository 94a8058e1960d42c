package nameserver

import (
	"fmt"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
)

// Request admission. Every request passes the guards of the name server before its handler,
// on the connection's reader goroutine, in this order:
//
//  1. with aclEnable=true, the ACL guard (libs/acl): a valid signature of a known account on
//     every request; REGISTER_BROKER, UNREGISTER_BROKER, QUERY_DATA_VERSION and the other
//     writes only from admin accounts (acl.NeedsAdmin); route and cluster lookups from any
//     account. Refusals are NO_PERMISSION.
//  2. with aclEnable=false, the admin guard (admin.go): the admin writes, QUERY_DATA_VERSION
//     and GET_NAMESRV_CONFIG signed with the registration secret, as registrations are.
//  3. Config.Guards, in order (for example an authenticated-registration check for when ACL is
//     off). Each guard decides per request code and returns nil for the codes it does not own.
//
// The first refusal answers; a request every guard admits reaches its handler. With ACL on, a
// registration that reaches a later guard or the handler is known to come from an admin
// account (ACLEnabled reports it).
type guardChain []remoting.Guard

// Admit implements remoting.Guard.
func (gs guardChain) Admit(c *remoting.ServerConn, req *remoting.Command) *remoting.Command {
	for _, g := range gs {
		if refusal := g.Admit(c, req); refusal != nil {
			return refusal
		}
	}
	return nil
}

// buildGuards returns the guard the remoting server runs (nil when there is none) and the ACL
// guard (nil with aclEnable=false).
func buildGuards(cfg Config, adminRefused func(req *remoting.Command, peer string, err error)) (remoting.Guard, *acl.Guard, error) {
	var chain guardChain
	var ag *acl.Guard
	if cfg.AclEnable {
		g, err := acl.NewGuard(acl.Config{Path: cfg.AclPlainFile, Logger: cfg.Logger.WithField("component", "acl")})
		if err != nil {
			return nil, nil, fmt.Errorf("nameserver: aclEnable=true: %w", err)
		}
		ag = g
		if secret, _ := cfg.registrationSecret(); secret != "" {
			// Brokers that sign their registrations with the registration secret pass the
			// ACL guard; the registration handler verifies that secret.
			chain = append(chain, secretRegistrations{g})
		} else {
			chain = append(chain, g)
		}
	} else {
		cfg.Logger.Warn("aclEnable=false: any client that reaches listenPort may look up routes (set aclEnable=true and aclPlainFile)")
		// The admin writes are then authenticated like registrations (admin.go).
		g := adminGuard{allowUnsigned: cfg.RegistrationAllowUnauthenticated, onRefusal: adminRefused}
		secret, err := cfg.registrationSecret()
		if err != nil {
			return nil, nil, err
		}
		if secret != "" {
			if g.secret, err = NewSecretAuthenticator(secret); err != nil {
				return nil, nil, err
			}
		}
		chain = append(chain, g)
	}
	for _, g := range cfg.Guards {
		if g != nil {
			chain = append(chain, g)
		}
	}
	switch len(chain) {
	case 0:
		return nil, ag, nil
	case 1:
		return chain[0], ag, nil
	}
	return chain, ag, nil
}

// ACLEnabled reports whether the ACL guard checks requests (aclEnable=true): then every
// REGISTER_BROKER and UNREGISTER_BROKER a handler sees was signed by an admin account.
func (s *Server) ACLEnabled() bool { return s.acl != nil }

// ACL is the ACL guard in use, or nil.
func (s *Server) ACL() *acl.Guard { return s.acl }

// secretRegistrations lets REGISTER_BROKER and UNREGISTER_BROKER signed under
// acl.BrokerAccessKey through to the registration handler (which checks the registration
// secret, the signed time and digest); every other request goes to the ACL guard.
type secretRegistrations struct{ acl remoting.Guard }

// Admit implements remoting.Guard.
func (g secretRegistrations) Admit(c *remoting.ServerConn, req *remoting.Command) *remoting.Command {
	if (req.Code == remoting.RegisterBroker || req.Code == remoting.UnregisterBroker) &&
		req.Ext(acl.ExtAccessKey) == acl.BrokerAccessKey {
		return nil
	}
	return g.acl.Admit(c, req)
}
