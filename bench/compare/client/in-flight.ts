/**
 * What the peers Vela is compared with share: each is used the way its documentation recommends for
 * durable messaging with acknowledgements, with about 1,024 unacknowledged deliveries per consumer like
 * Vela's PushConsumer (`maxCachedMessages` 1,024). Each peer is its own module, and a client process
 * loads only the one it measures (`main.ts`): another client library's code and data in the heap
 * would change how often the process collects garbage, and so W3's tail.
 */
export const IN_FLIGHT_DELIVERIES = 1024;
