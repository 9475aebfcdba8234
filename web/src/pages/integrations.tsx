export default function IntegrationsPage() {
  return (
    <section className="page">
      <h1>Integrations</h1>
    </section>
  );
}
