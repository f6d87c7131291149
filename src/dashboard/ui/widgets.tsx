/** Building blocks of the console's pages: panels, tables, notices, confirmation buttons. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

export function Panel(props: {
  title: string;
  children: ComponentChildren;
  actions?: ComponentChildren;
  id?: string;
}) {
  return (
    <section class="panel" id={props.id}>
      <header>
        <h2>{props.title}</h2>
        {props.actions ? <div class="actions">{props.actions}</div> : null}
      </header>
      {props.children}
    </section>
  );
}

export function Stat(props: { label: string; value: ComponentChildren; hint?: string; warn?: boolean }) {
  return (
    <div class={`stat${props.warn ? ' warn' : ''}`} title={props.hint}>
      <div class="label">{props.label}</div>
      <div class="value">{props.value}</div>
    </div>
  );
}

export function ErrorNote(props: { error: Error | undefined }) {
  return props.error ? (
    <p class="error" role="alert">
      {props.error.message}
    </p>
  ) : null;
}

export function Empty(props: { children: ComponentChildren }) {
  return <p class="empty">{props.children}</p>;
}

/** A button that asks once more before doing something that cannot be undone. */
export function ConfirmButton(props: {
  label: string;
  confirm: string;
  onConfirm: () => Promise<unknown> | void;
  class?: string;
  testId?: string;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  if (!asking)
    return (
      <button class={props.class ?? 'danger'} data-testid={props.testId} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  return (
    <span class="confirm">
      {props.confirm}{' '}
      <button
        class="danger"
        disabled={busy}
        data-testid={props.testId ? `${props.testId}-yes` : undefined}
        onClick={async () => {
          setBusy(true);
          try {
            await props.onConfirm();
          } finally {
            setBusy(false);
            setAsking(false);
          }
        }}
      >
        Yes
      </button>{' '}
      <button onClick={() => setAsking(false)}>No</button>
    </span>
  );
}
