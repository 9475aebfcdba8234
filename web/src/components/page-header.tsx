// The top of a detail page (an integration, a toolkit): the link back to its list, the title with
// its facts and actions; and the page that stands in while it loads or when it cannot be shown.

import type { ReactNode } from "react";
import { Link } from "wouter";

export interface Back {
  href: string;
  /** The list's name: the link reads "← {label}". */
  label: string;
}

function BackLink({ back }: { back: Back }) {
  return (
    <p>
      <Link href={back.href}>← {back.label}</Link>
    </p>
  );
}

/**
 * The back link and the header: the title, a line of facts (the slug, a badge of what it is, then
 * `meta`), an optional lede, the buttons.
 */
export function DetailHeader({
  back,
  title,
  slug,
  badge,
  meta,
  lede,
  actions,
}: {
  back: Back;
  title: string;
  slug: string;
  badge: string;
  meta: ReactNode;
  lede?: ReactNode;
  actions: ReactNode;
}) {
  return (
    <>
      <BackLink back={back} />
      <div className="page-header">
        <div className="stack" style={{ gap: "0.3rem" }}>
          <h1>{title}</h1>
          <div className="detail-meta">
            <code>{slug}</code>
            <span className="badge">{badge}</span>
            {meta}
          </div>
          {lede}
        </div>
        <div className="row">{actions}</div>
      </div>
    </>
  );
}

/** A detail page that cannot be shown: missing (`error` false) or failed to load. */
export function DetailUnavailable({ back, title, message, error }: { back: Back; title: string; message: ReactNode; error: boolean }) {
  return (
    <section className="page">
      <BackLink back={back} />
      <h1>{title}</h1>
      <p className={error ? "form-top-error" : "muted"} role="alert">
        {message}
      </p>
    </section>
  );
}

export function PageLoading() {
  return (
    <p className="page muted" role="status">
      Loading…
    </p>
  );
}
