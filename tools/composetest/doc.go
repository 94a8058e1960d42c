// Package composetest holds the end-to-end test of docker-compose.yml: it builds the offline
// images (deploy/build-offline-images.sh), starts the whole group under a unique compose project,
// drives it with rocketmq-client-go through the ports published on the host, kills the master,
// cuts the slave off the network, recreates every container with the volumes kept, and removes
// everything at the end.
//
// The test skips itself, saying why, when no Docker engine or compose command is reachable, or
// when RMQHA_SKIP_COMPOSE=1.
package composetest
