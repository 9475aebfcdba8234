export default function OauthAppsPage() {
  return (
    <section className="page">
      <h1>OauthApps</h1>
    </section>
  );
}
