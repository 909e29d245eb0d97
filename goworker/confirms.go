package goworker

import (
	"context"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// confirmer publishes on a confirm-mode channel and waits for each publish's own confirm.
//
// It does not use amqp091-go 1.5.0's DeferredConfirmation: that registers a publish only after
// sending it, so a broker that confirms fast enough (a local one does) is answered before the
// registration and the confirm is lost, leaving Wait blocked forever. Here the waiter is
// registered under the publish's sequence number before the publish goes out, and publishes
// are serialised so that the number is the one the broker will confirm.
type confirmer struct {
	ch        *amqp.Channel
	publishMu sync.Mutex // held from reading the sequence number to sending the publish
	mu        sync.Mutex // guards waiting and closed
	waiting   map[uint64]chan bool
	closed    bool
}

// newConfirmer starts listening for the confirms of ch (already in confirm mode).
func newConfirmer(ch *amqp.Channel) *confirmer {
	c := &confirmer{ch: ch, waiting: map[uint64]chan bool{}}
	go c.listen(ch.NotifyPublish(make(chan amqp.Confirmation, 64)))
	return c
}

// listen hands each confirm to its waiter; when the channel closes, every waiter is released.
func (c *confirmer) listen(confirms <-chan amqp.Confirmation) {
	for confirmation := range confirms {
		c.mu.Lock()
		if waiter, ok := c.waiting[confirmation.DeliveryTag]; ok {
			waiter <- confirmation.Ack
			delete(c.waiting, confirmation.DeliveryTag)
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for tag, waiter := range c.waiting {
		close(waiter)
		delete(c.waiting, tag)
	}
}

// publish sends msg to the default exchange (mandatory) and waits for the broker's confirm:
// true when acked, false when nacked; errChannelClosed when the channel closed first.
func (c *confirmer) publish(routingKey string, msg amqp.Publishing) (bool, error) {
	waiter := make(chan bool, 1)
	c.publishMu.Lock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.publishMu.Unlock()
		return false, errChannelClosed
	}
	tag := c.ch.GetNextPublishSeqNo()
	c.waiting[tag] = waiter
	c.mu.Unlock()
	err := c.ch.PublishWithContext(context.Background(), "", routingKey, true, false, msg)
	c.publishMu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.waiting, tag)
		c.mu.Unlock()
		return false, err
	}
	ack, open := <-waiter
	if !open {
		return false, errChannelClosed
	}
	return ack, nil
}
