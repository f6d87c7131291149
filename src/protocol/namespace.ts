/**
 * Namespaces. Clients send theirs in the `x-mq-namespace` header (the Node client leaves it out of
 * most resources), and RocketMQ's convention `namespace%name` keys namespaced topics and groups.
 */
export function toInternal(namespace: string, name: string): string {
  return namespace && !name.startsWith(`${namespace}%`) ? `${namespace}%${name}` : name;
}

export function fromInternal(internal: string): { namespace: string; name: string } {
  if (internal.startsWith('%')) return { namespace: '', name: internal }; // %RETRY% / %DLQ% system names
  const i = internal.indexOf('%');
  return i > 0
    ? { namespace: internal.slice(0, i), name: internal.slice(i + 1) }
    : { namespace: '', name: internal };
}
